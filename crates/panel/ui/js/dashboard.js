// The first page: how the service is doing. Users by status (a bar split by status,
// with the counts), online now, traffic for 30 days (a bar per day), servers and
// tunnels by state, who expires soon or is nearly out of traffic, and the clusters.

import { h, fill } from "./dom.js";
import { get } from "./api.js";
import { bytes } from "./format.js";
import { barChart } from "./chart.js";
import { t, msg } from "./i18n.js";

const DAY = 86400000;
const STATUSES = [["active", msg("Active")], ["on_hold", msg("On hold")], ["limited", msg("Limited")], ["expired", msg("Expired")],
  ["disabled", msg("Disabled")]];
const TUNNELS = [["connected", msg("Tunnels, connected: {n}")], ["no_connections", msg("Tunnels, no connections: {n}")],
  ["unreachable", msg("Tunnels, relay unreachable: {n}")]];
const SERVERS = [["online", msg("Servers online: {n}")], ["unavailable", msg("Servers unavailable: {n}")],
  ["pending", msg("Servers pending: {n}")]];

export async function dashboardPage(main, ctx) {
  const body = h("div", { class: "dashboard", "data-dashboard": "" });
  fill(main, h("div", { class: "page-head" }, h("h1", {}, t("Dashboard"))), body);
  async function load() {
    const [d, clusters] = await Promise.all([get("/dashboard"), get("/clusters")]);
    const total = STATUSES.reduce((s, [k]) => s + d.users[k], 0);
    fill(body,
      h("section", { class: "card", "aria-labelledby": "d-users" },
        h("h2", { id: "d-users" }, t("Users: {n}", { n: total })),
        statusBar(d.users, total),
        h("ul", { class: "legend" }, STATUSES.map(([k, label]) => h("li", { "data-status": k },
          h("span", { class: `swatch status-${k}` }), t("{label}: {n}", { label: t(label), n: d.users[k] })))),
        h("p", { "data-online": "" }, t("Online now: {n}", { n: d.online }))),
      h("section", { class: "card", "aria-labelledby": "d-traffic" },
        h("h2", { id: "d-traffic" }, t("Traffic")),
        barChart(d.traffic.map((p) => ({ at_ms: p.day_ms, value: p.bytes })),
          { stepMs: DAY, fromMs: d.traffic[0].day_ms, toMs: d.traffic[d.traffic.length - 1].day_ms + DAY, format: bytes, label: t("Last 30 days") }),
        h("p", { "data-today": "" }, t("Today so far: {size}", { size: bytes(d.traffic[d.traffic.length - 1].bytes) }))),
      h("section", { class: "card", "aria-labelledby": "d-servers" },
        h("h2", { id: "d-servers" }, t("Servers and tunnels")),
        h("ul", { class: "legend" }, SERVERS.map(([k, text]) => h("li", { "data-servers": k }, t(text, { n: d.servers[k] || 0 })))),
        h("ul", { class: "legend" }, TUNNELS.map(([k, text]) => h("li", { "data-tunnels": k }, t(text, { n: d.tunnels[k] || 0 }))))),
      h("section", { class: "card", "aria-labelledby": "d-soon" },
        h("h2", { id: "d-soon" }, t("Needs attention")),
        some(t("Expiring within 3 days"), d.expiring, "expiring"),
        some(t("Nearly out of traffic (90 % or more)"), d.nearly_out, "nearly-out")),
      h("section", { class: "card", "aria-labelledby": "d-clusters" },
        h("h2", { id: "d-clusters" }, t("Clusters")),
        clusters.length
          ? h("ul", {}, clusters.map((c) => h("li", {}, h("a", { href: `#/clusters/${c.id}`, "data-cluster": c.id }, c.name))))
          : h("p", {}, h("a", { href: "#/clusters" }, t("Make the first cluster")))));
  }
  await load();
  ctx.every(10000, () => load().catch(() => {}));
}

/** One bar split by status, widths in proportion; read out as its counts. */
function statusBar(users, total) {
  const W = 640;
  let x = 0;
  const parts = STATUSES.filter(([k]) => users[k] > 0).map(([k, label]) => {
    const w = (users[k] / total) * W;
    const r = h("rect", { x, y: 0, width: w, height: 24, class: `status-${k}` }, h("title", {}, t("{label}: {n}", { label: t(label), n: users[k] })));
    x += w;
    return r;
  });
  const said = STATUSES.map(([k, label]) => t("{label} {n}", { label: t(label), n: users[k] })).join(t(", "));
  return total ? h("svg", { class: "status-bar", viewBox: `0 0 ${W} 24`, role: "img", "aria-label": t("Users by status: {list}", { list: said }) }, parts)
    : h("p", { class: "muted" }, t("No user yet."));
}

function some(title, s, key) {
  return h("div", { [`data-${key}`]: "" },
    h("h3", {}, t("{label}: {n}", { label: title, n: s.count })),
    s.names.length ? h("p", {}, s.names.join(t(", ")) + (s.count > s.names.length ? t(", …") : "")) : null);
}
