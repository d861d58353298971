// A cluster: its servers (state, throughput, users online, capacity, the node's
// version and its upgrade, the join command, the install over SSH), the topology of its routes, and the forms that change them. Live: the
// page polls every 3 s and redraws only what changed (never during a drag or with a
// menu or dialog open).

import { h, fill, field, dialog, showError, confirmAction, copy, toast } from "./dom.js";
import { get, post, put, del } from "./api.js";
import { num, rate, when } from "./format.js";
import { drawTopology, stateBadge } from "./topology.js";
import { barChart } from "./chart.js";
import { routeForm } from "./route_form.js";
import { inboundForm } from "./inbound_form.js";
import { routingForm } from "./routing_form.js";
import { sshInstall } from "./ssh_install.js";
import { upgradeServer, upgradeAll } from "./upgrade.js";
import { t, msg } from "./i18n.js";

/** Every cluster, and a form for a new one. */
export async function clustersPage(main) {
  const clusters = await get("/clusters");
  const name = h("input", { name: "name", required: true, maxlength: 64, placeholder: t("Europe") });
  const form = h("form", { class: "inline" }, field(t("New cluster"), name),
    h("button", { type: "submit", class: "primary" }, t("Create cluster")));
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    try {
      const c = await post("/clusters", { name: name.value.trim() });
      location.hash = `#/clusters/${c.id}`;
    } catch (err) { showError(form, err); }
  });
  fill(main, h("h1", {}, t("Clusters")),
    clusters.length ? h("ul", { class: "list" }, clusters.map((c) => h("li", {}, h("a", { href: `#/clusters/${c.id}` }, c.name))))
      : h("p", { class: "muted" }, t("No cluster yet: a cluster holds servers, inbounds and routes that belong together.")),
    form);
}

export async function clusterPage(main, id, ctx) {
  const clusters = await get("/clusters");
  const cluster = clusters.find((c) => c.id === id);
  if (!cluster) throw new Error(t("There is no cluster {id}.", { id: String(id) }));
  const serversBox = h("section", { class: "card", "aria-labelledby": "servers-h" });
  const topoBox = h("div", {});
  const routesBox = h("section", { class: "card", "aria-labelledby": "routes-h" },
    h("div", { class: "section-head" },
      h("h2", { id: "routes-h" }, t("Routes")),
      h("div", { class: "actions" },
        h("button", { type: "button", "data-routing": "", onclick: () => routingForm(t("Routing in {cluster}", { cluster: cluster.name }),
          `/clusters/${id}/routing`, t("its users' apps get the panel's default routing")) }, t("Routing…")),
        h("button", { type: "button", "data-new-inbound": "", onclick: () => newInbound() }, t("New inbound")),
        h("button", { type: "button", class: "primary", "data-new-route": "", onclick: () => newRoute() }, t("New route")))),
    h("p", { class: "muted" }, t("One non-empty route is one entry in users' apps, in this order. Drag an inbound onto a route (or press it for a menu) to move it.")),
    topoBox);
  fill(main,
    h("div", { class: "page-head" }, h("h1", {}, cluster.name),
      clusters.length > 1 ? h("nav", { "aria-label": t("Other clusters"), class: "chips" },
        clusters.filter((c) => c.id !== id).map((c) => h("a", { href: `#/clusters/${c.id}` }, c.name))) : null),
    routesBox, serversBox);

  let data = null;
  let last = "";
  let topo = null;
  const busy = () => document.body.classList.contains("dragging") || document.querySelector(".menu, dialog[open]");

  async function load(force) {
    const [servers, inbounds, routes] = await Promise.all([
      get(`/servers?cluster_id=${id}`), get(`/inbounds?cluster_id=${id}`), get(`/clusters/${id}/routes`),
    ]);
    data = { servers, inbounds, routes: routes.routes, unattached: routes.unattached_inbound_ids, warning: routes.warning };
    const now = JSON.stringify(data);
    if (!force && (now === last || busy())) return;
    last = now;
    drawServers(serversBox, data.servers, id, load);
    topo?.stop();
    topo = drawTopology(topoBox, data, actions);
  }

  const act = async (f, ok) => {
    try {
      await f();
      if (ok) toast(ok);
    } catch (err) {
      toast(err.message, "bad");
    }
    await load(true);
  };
  const actions = {
    attach: (i, routeId) => act(() => put(`/inbounds/${i.id}/route`, { route_id: routeId }),
      routeId === null ? t("{inbound} is in no route now", { inbound: i.name })
        : t("{inbound} moved to {route}", { inbound: i.name, route: data.routes.find((r) => r.id === routeId)?.name })),
    move: (r, direction) => act(() => post(`/routes/${r.id}/move`, { direction })),
    order: (ids) => act(() => put(`/clusters/${id}/routes/order`, { route_ids: ids })),
    editRoute: async (r) => { if (await routeForm(id, r, data.inbounds, data.routes)) await load(true); },
    deleteRoute: async (r) => {
      const n = r.inbound_ids.length;
      const ok = await confirmAction(t("Delete route {name}?", { name: r.name }),
        n ? t("Users' apps lose the entry \"{name}\" at their next update. Its {n} inbound(s) will be in no route.", { name: r.name, n })
          : t("Users' apps lose the entry \"{name}\" at their next update.", { name: r.name }), t("Delete route"));
      if (ok) await act(() => del(`/routes/${r.id}`), t("Route {name} deleted", { name: r.name }));
    },
    editInbound: async (i) => { if (await inboundForm(data.servers, i, await get("/tunnels"))) await load(true); },
    deleteInbound: async (i) => {
      const ok = await confirmAction(t("Delete inbound {name}?", { name: i.name }),
        t("The node stops listening on port {port}; users connected through it are cut off and get another server at their next update.", { port: String(i.port) }), t("Delete inbound"));
      if (ok) await act(() => del(`/inbounds/${i.id}`), t("Inbound {name} deleted", { name: i.name }));
    },
  };
  async function newRoute() {
    if (await routeForm(id, null, data.inbounds, data.routes)) await load(true);
  }
  async function newInbound() {
    if (!data.servers.length) { toast(t("Add a server first."), "bad"); return; }
    if (await inboundForm(data.servers, null, await get("/tunnels"))) await load(true);
  }

  await load(true);
  ctx.every(3000, () => load(false).catch(() => {}));
}

function drawServers(box, servers, clusterId, reload) {
  const name = h("input", { name: "name", required: true, maxlength: 64, placeholder: "de-1" });
  const address = h("input", { name: "address", required: true, maxlength: 253, placeholder: "de1.example.com" });
  const privateOk = h("input", { type: "checkbox", name: "allow_private_destinations" });
  // Kept across redraws: a join command just issued stays on screen.
  const joinOut = box.querySelector(".join-out") || h("div", { class: "join-out" });
  const form = h("form", { class: "inline", "aria-label": t("Add a server") },
    field(t("Name"), name), field(t("Address clients dial"), address),
    h("label", { class: "check" }, privateOk, " ", t("Users may reach private addresses")),
    h("button", { type: "submit", class: "primary" }, t("Add server")),
    h("p", { class: "form-error", role: "alert" }));
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    showError(form, null);
    try {
      const s = await post("/servers", { cluster_id: clusterId, name: name.value.trim(), address: address.value.trim(), allow_private_destinations: privateOk.checked });
      await showJoin(joinOut, s);
      form.reset();
      reload(true);
    } catch (err) { showError(form, err); }
  });
  const rows = servers.map((s) => h("tr", { "data-server-row": s.id },
    h("th", { scope: "row" }, s.name, h("br"), h("small", { class: "muted" }, s.address)),
    h("td", {}, stateBadge(s.state), s.state_reason ? h("small", { class: "muted block" }, s.state_reason) : null),
    h("td", {}, `↑ ${rate(s.up_bytes_per_s)}`, h("br"), `↓ ${rate(s.down_bytes_per_s)}`),
    h("td", { class: "num" }, num(s.users_online)),
    h("td", {}, s.capacity_bytes_per_s ? rate(s.capacity_bytes_per_s) : h("span", { class: "muted" }, t("no estimate yet"))),
    h("td", { "data-node-version": s.id },
      s.node_version ? `${s.node_version}` : "—",
      s.binary_sha256 ? h("small", { class: "muted block", title: `sha256 ${s.binary_sha256}` }, t("binary {sha}…", { sha: s.binary_sha256.slice(0, 12) })) : null,
      h("small", { class: "muted block" }, s.refreshed_ms ? t("seen {when}", { when: when(s.refreshed_ms) }) : t("never seen")),
      s.upgrade_available
        ? h("button", { type: "button", "data-upgrade": s.id, title: t("Runs another binary than this panel hands out"), onclick: () => upgradeServer(s, reload) }, t("Upgrade"))
        : null),
    h("td", {},
      h("button", { type: "button", "data-history": s.id, onclick: () => history(s) }, t("History")),
      s.joined
        ? h("button", { type: "button", "data-replace-node": s.id, onclick: () => replaceNode(joinOut, s, reload) }, t("Replace node…"))
        : [h("button", { type: "button", onclick: () => showJoin(joinOut, s) }, t("Join command")),
          h("button", { type: "button", "data-ssh-install": s.id, onclick: () => sshInstall(s, reload) }, t("Install over SSH…"))],
      h("button", { type: "button", class: "danger-text", onclick: () => removeServer(s, reload) }, t("Delete")))));
  const outdated = servers.filter((s) => s.upgrade_available).length;
  fill(box,
    h("h2", { id: "servers-h" }, t("Servers")),
    outdated ? h("p", { class: "notice" }, t("{n} server(s) run another binary than this panel hands out.", { n: outdated }), " ",
      h("button", { type: "button", "data-upgrade-all": "", onclick: () => upgradeAll(reload) }, t("Upgrade all"))) : null,
    servers.length ? h("div", { class: "table-wrap" }, h("table", {},
      h("thead", {}, h("tr", {}, [t("Server"), t("State"), t("Throughput"), t("Users online"), t("Capacity estimate"), t("Node"), ""].map((x) => h("th", { scope: "col" }, x)))),
      h("tbody", {}, rows))) : h("p", { class: "muted" }, t("No server yet.")),
    joinOut, form);
}

/** The spans a server's history shows: the choice, each chart's caption, the step. */
const SPANS = [
  { choice: msg("Last 6 hours"), throughput: msg("Throughput (up + down, average per minute), last 6 hours"),
    users: msg("Users online (most per minute), last 6 hours"), step: "minute", span: 6 * 3600_000 },
  { choice: msg("Last 48 hours"), throughput: msg("Throughput (up + down, average per minute), last 48 hours"),
    users: msg("Users online (most per minute), last 48 hours"), step: "minute", span: 48 * 3600_000 },
  { choice: msg("Last 30 days"), throughput: msg("Throughput (up + down, average per hour), last 30 days"),
    users: msg("Users online (most per hour), last 30 days"), step: "hour", span: 30 * 86400_000 },
];

/** The server's throughput and users online over time, as charts. */
function history(server) {
  return dialog(t("{server} over time", { server: server.name }), (close) => {
    const charts = h("div", { class: "charts" });
    const choose = h("select", { name: "span", "aria-label": t("Time span") },
      SPANS.map((s, i) => h("option", { value: i }, t(s.choice))));
    async function draw() {
      const { throughput, users, step, span } = SPANS[Number(choose.value)];
      const now = Date.now();
      try {
        const r = await get(`/servers/${server.id}/history?step=${step}&since_ms=${now - span}`);
        const opts = { stepMs: r.step_ms, fromMs: now - span, toMs: now };
        fill(charts,
          barChart(r.points.map((p) => ({ at_ms: p.at_ms, value: p.up_bytes_per_s + p.down_bytes_per_s })),
            { ...opts, format: rate, label: t(throughput), sum: false }),
          barChart(r.points.map((p) => ({ at_ms: p.at_ms, value: p.users_max })),
            { ...opts, format: (n) => t("{n} users", { n }), label: t(users), sum: false }));
      } catch (err) {
        fill(charts, h("p", { class: "bad" }, err.message));
      }
    }
    choose.addEventListener("change", draw);
    draw();
    return h("div", {}, choose, charts,
      h("div", { class: "actions" }, h("button", { type: "button", class: "primary", onclick: () => close(true) }, t("Close"))));
  });
}

async function showJoin(out, server, replacing) {
  try {
    const j = await post(`/servers/${server.id}/${replacing ? "replace" : "join"}`);
    const expires = when(j.expires_ms);
    const row = (text, attr, copied) => h("div", { class: "copy-row" },
      h("code", { class: "command", [attr]: "" }, text),
      h("button", { type: "button", onclick: () => copy(text, copied) }, t("Copy")));
    const rows = [h("p", {}, replacing
      ? t("Paste this as root on the server that takes {name}'s place (single use, expires {expires}; older join commands no longer work). It downloads this panel's binary, checks it against the token, installs the node as a service and joins:", { name: server.name, expires })
      : t("Paste this as root on {name} (single use, expires {expires}; older join commands no longer work). It downloads this panel's binary, checks it against the token, installs the node as a service and joins:", { name: server.name, expires }))];
    if (j.command !== j.join_command) rows.push(row(j.command, "data-install-command", t("Install command copied")));
    rows.push(h("p", {}, j.command !== j.join_command ? t("Or, where switchyard is already installed, join and run it in the foreground:") : t("Run it where switchyard is installed:")));
    rows.push(row(j.join_command, "data-join-command", t("Join command copied")));
    rows.push(h("p", {}, t("Or let the panel do it over SSH, with a password or a key it never stores:")),
      h("button", { type: "button", "data-ssh-install": server.id, onclick: () => sshInstall(server, () => {}) }, t("Install over SSH…")));
    fill(out, h("div", { class: "notice" }, ...rows));
  } catch (err) { toast(err.message, "bad"); }
}

/** Puts another node in the server's place: the joined one is cut off at once. */
async function replaceNode(out, s, reload) {
  const ok = await confirmAction(t("Replace the node of {name}?", { name: s.name }),
    t("The panel forgets the node that joined: it is cut off at once and cannot connect again. You get a new join command for the node that takes its place; until it joins, users on this server get no service. The server's inbounds and users stay."), t("Replace node"));
  if (!ok) return;
  await showJoin(out, s, true);
  reload(true);
}

async function removeServer(s, reload) {
  const ok = await confirmAction(t("Delete server {name}?", { name: s.name }),
    t("Its inbounds go with it, its node is cut off from the panel, and users on it get another server at their next update."), t("Delete server"));
  if (!ok) return;
  try { await del(`/servers/${s.id}`); toast(t("Server {name} deleted", { name: s.name })); } catch (err) { toast(err.message, "bad"); }
  reload(true);
}
