// The first page: how the service is doing. Users by status (a bar split by status,
// with the counts), online now, traffic for 30 days (a bar per day), servers and
// tunnels by state, who expires soon or is nearly out of traffic, and the clusters.

import { h, fill } from "./dom.js";
import { get } from "./api.js";
import { bytes } from "./format.js";
import { barChart } from "./chart.js";

const DAY = 86400000;
const STATUSES = [["active", "Active"], ["on_hold", "On hold"], ["limited", "Limited"], ["expired", "Expired"], ["disabled", "Disabled"]];
const TUNNELS = [["connected", "Connected"], ["no_connections", "No connections"], ["unreachable", "Relay unreachable"]];
const SERVERS = [["online", "Online"], ["unavailable", "Unavailable"], ["pending", "Pending"]];

export async function dashboardPage(main, ctx) {
  const body = h("div", { class: "dashboard", "data-dashboard": "" });
  fill(main, h("div", { class: "page-head" }, h("h1", {}, "Dashboard")), body);
  async function load() {
    const [d, clusters] = await Promise.all([get("/dashboard"), get("/clusters")]);
    const total = STATUSES.reduce((s, [k]) => s + d.users[k], 0);
    fill(body,
      h("section", { class: "card", "aria-labelledby": "d-users" },
        h("h2", { id: "d-users" }, `Users: ${total}`),
        statusBar(d.users, total),
        h("ul", { class: "legend" }, STATUSES.map(([k, t]) => h("li", { "data-status": k },
          h("span", { class: `swatch status-${k}` }), `${t}: ${d.users[k]}`))),
        h("p", { "data-online": "" }, `Online now: ${d.online}`)),
      h("section", { class: "card", "aria-labelledby": "d-traffic" },
        h("h2", { id: "d-traffic" }, "Traffic"),
        barChart(d.traffic.map((t) => ({ at_ms: t.day_ms, value: t.bytes })),
          { stepMs: DAY, fromMs: d.traffic[0].day_ms, toMs: d.traffic[d.traffic.length - 1].day_ms + DAY, format: bytes, label: "Last 30 days" }),
        h("p", { "data-today": "" }, `Today so far: ${bytes(d.traffic[d.traffic.length - 1].bytes)}`)),
      h("section", { class: "card", "aria-labelledby": "d-servers" },
        h("h2", { id: "d-servers" }, "Servers and tunnels"),
        h("ul", { class: "legend" }, SERVERS.map(([k, t]) => h("li", { "data-servers": k }, `Servers ${t.toLowerCase()}: ${d.servers[k] || 0}`))),
        h("ul", { class: "legend" }, TUNNELS.map(([k, t]) => h("li", { "data-tunnels": k }, `Tunnels, ${t.toLowerCase()}: ${d.tunnels[k] || 0}`)))),
      h("section", { class: "card", "aria-labelledby": "d-soon" },
        h("h2", { id: "d-soon" }, "Needs attention"),
        some("Expiring within 3 days", d.expiring, "expiring"),
        some("Nearly out of traffic (90 % or more)", d.nearly_out, "nearly-out")),
      h("section", { class: "card", "aria-labelledby": "d-clusters" },
        h("h2", { id: "d-clusters" }, "Clusters"),
        clusters.length
          ? h("ul", {}, clusters.map((c) => h("li", {}, h("a", { href: `#/clusters/${c.id}`, "data-cluster": c.id }, c.name))))
          : h("p", {}, h("a", { href: "#/clusters" }, "Make the first cluster"))));
  }
  await load();
  ctx.every(10000, () => load().catch(() => {}));
}

/** One bar split by status, widths in proportion; read out as its counts. */
function statusBar(users, total) {
  const W = 640;
  let x = 0;
  const parts = STATUSES.filter(([k]) => users[k] > 0).map(([k, t]) => {
    const w = (users[k] / total) * W;
    const r = h("rect", { x, y: 0, width: w, height: 24, class: `status-${k}` }, h("title", {}, `${t}: ${users[k]}`));
    x += w;
    return r;
  });
  const said = STATUSES.map(([k, t]) => `${t} ${users[k]}`).join(", ");
  return total ? h("svg", { class: "status-bar", viewBox: `0 0 ${W} 24`, role: "img", "aria-label": `Users by status: ${said}` }, parts)
    : h("p", { class: "muted" }, "No user yet.");
}

function some(title, s, key) {
  return h("div", { [`data-${key}`]: "" },
    h("h3", {}, `${title}: ${s.count}`),
    s.names.length ? h("p", {}, s.names.join(", ") + (s.count > s.names.length ? ", …" : "")) : null);
}
