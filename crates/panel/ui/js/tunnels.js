// Tunnels: the list with live state badges, the form (the name locked after saving;
// each profile's security, REALITY by default on a new tunnel's first, with its
// target, and its links; in direct mode, each origin's addresses), a tunnel's page with the live status of every node, the REALITY public
// key, Reset, Duplicate, re-issuing the certificate, and the usage chart.

import { h, fill, field, dialog, showError, confirmAction, toast } from "./dom.js";
import { get, post, put, del } from "./api.js";
import { bytes, duration, num } from "./format.js";
import { barChart } from "./chart.js";
import { t, msg } from "./i18n.js";

/** The API's states (crates/panel/src/nodes/tunnel_status.rs) in the language on screen. */
function stateText(state) {
  if (!state) return "…";
  const links = /^Connections: (\d+)$/.exec(state);
  if (links) return t("Connections: {n}", { n: Number(links[1]) });
  if (state === "No connections") return t("No connections");
  if (state === "Relay unreachable") return t("Relay unreachable");
  return state;
}

/** The state in words, coloured by what it means. */
export function tunnelBadge(state) {
  const kind = !state ? "unknown" : state.startsWith("Connections") ? "good" : state === "No connections" ? "warn" : "bad";
  return h("span", { class: `badge tunnel-${kind}`, "data-tunnel-state": "" }, stateText(state));
}

const MODES = { reverse: msg("reverse"), direct: msg("direct") };
const BALANCING = { distribute: msg("distribute"), priority: msg("priority") };

async function serverNames() {
  const servers = await get("/servers");
  return { servers, name: (id) => servers.find((s) => s.id === id)?.name || t("server {id}", { id: String(id) }) };
}

export async function tunnelsPage(main, ctx) {
  const { servers, name } = await serverNames();
  const list = h("div", {});
  fill(main,
    h("div", { class: "page-head" }, h("h1", {}, t("Tunnels")),
      h("div", { class: "actions" }, h("button", { type: "button", class: "primary", "data-new-tunnel": "", onclick: create }, t("New tunnel")))),
    h("p", { class: "muted" }, t("A tunnel carries a relay's users out through its origins: users connect to the relay and leave from an origin, each user pinned to one origin.")),
    list);
  let tunnels = [];
  async function create() {
    const made = await tunnelForm(servers, null);
    if (made) location.hash = `#/tunnels/${made.id}`;
  }
  async function load() {
    tunnels = await get("/tunnels");
    fill(list, tunnels.length ? h("div", { class: "table-wrap" }, h("table", {},
      h("thead", {}, h("tr", {}, [t("Tunnel"), t("State"), t("Relay"), t("Origins"), t("Mode")].map((x) => h("th", { scope: "col" }, x)))),
      h("tbody", {}, tunnels.map((x) => h("tr", { "data-tunnel": x.id },
        h("th", { scope: "row" }, h("a", { href: `#/tunnels/${x.id}` }, x.name), x.enabled ? null : h("small", { class: "muted block" }, t("disabled"))),
        h("td", { "data-state-of": x.id }, tunnelBadge(null)),
        h("td", {}, name(x.relay_server_id)),
        h("td", {}, x.origins.map((o) => name(o.server_id)).join(", ")),
        h("td", {}, MODES[x.mode] ? t(MODES[x.mode]) : x.mode)))))) : h("p", { class: "muted" }, t("No tunnel yet.")));
    await states();
  }
  async function states() {
    const all = await get("/tunnels/status");
    for (const s of all) {
      const cell = list.querySelector(`[data-state-of="${s.id}"]`);
      if (cell) fill(cell, tunnelBadge(s.state), s.error ? h("small", { class: "muted block" }, s.error) : null);
    }
  }
  await load();
  ctx.every(3000, () => states().catch(() => {}));
}

/** `message` with `{name}` in it, the element `node` in its place. */
function around(message, node) {
  const [before, after = ""] = message.split("{name}");
  return [before, node, after];
}

/** A tunnel's origin in words: its server, its name in the tunnel, where it is dialed. */
function originText(tun, o, name) {
  return tun.mode === "direct" && o.addresses && o.addresses.length
    ? t("{server} ({origin}, dialed at {addresses})", { server: name(o.server_id), origin: o.name, addresses: o.addresses.join(", ") })
    : t("{server} ({origin})", { server: name(o.server_id), origin: o.name });
}

export async function tunnelPage(main, id, ctx) {
  const { servers, name } = await serverNames();
  let tun = await get(`/tunnels/${id}`);
  const badge = h("span", {});
  const live = h("div", {});
  const chart = h("div", {});
  const head = h("div", {});
  const drawHead = () => fill(head,
    h("div", { class: "page-head" },
      h("h1", {}, around(t("Tunnel {name}"), h("span", { class: "tunnel-name" }, tun.name))), badge,
      h("div", { class: "actions" },
        h("button", { type: "button", onclick: edit }, t("Edit")),
        h("button", { type: "button", "data-duplicate": "", onclick: duplicate }, t("Duplicate…")),
        h("button", { type: "button", onclick: reissue }, t("Re-issue certificate…")),
        h("button", { type: "button", "data-rotate": "", onclick: rotate }, t("Rotate credentials…")),
        h("button", { type: "button", class: "danger", "data-reset": "", onclick: reset }, t("Reset…")),
        h("button", { type: "button", class: "danger-text", onclick: remove }, t("Delete")))),
    h("dl", { class: "facts" },
      fact(t("Relay"), name(tun.relay_server_id)),
      fact(t("Origins"), tun.origins.map((o) => originText(tun, o, name)).join(", ")),
      fact(t("Mode"), tun.mode === "direct" ? t("Direct: the relay dials the origins") : t("Reverse: the origins dial the relay")),
      fact(t("Balancing"), BALANCING[tun.balancing] ? t(BALANCING[tun.balancing]) : tun.balancing),
      fact(t("Window"), t("{n} MiB", { n: tun.window_mib })),
      fact(t("Profiles"), tun.profiles.map(profileText).join(" · ")),
      fact(t("REALITY public key"), h("code", { "data-reality-public-key": "" }, tun.reality_public_key || t("none yet: made with the tunnel's first REALITY profile"))),
      fact(t("Enabled"), tun.enabled ? t("yes") : t("no: no node runs it")),
      fact(t("Certificate pin"), tun.previous_pin
        ? t("{pin} (the previous pin is still accepted while the new one rolls out)", { pin: tun.certificate_pin })
        : tun.certificate_pin),
      fact(t("Credentials"), tun.credential_epoch === 0 ? t("as first derived (never rotated)") : t("rotated {n} time(s)", { n: tun.credential_epoch }),
        tun.previous_credential_epoch !== null && tun.previous_credential_epoch !== undefined
          ? h("span", { "data-rotating": "" }, " ", t("(the previous ones are still accepted while the new ones roll out)")) : null)));
  fill(main, head,
    h("section", { class: "card", "aria-labelledby": "live-h" }, h("h2", { id: "live-h" }, t("Live status")), live),
    h("section", { class: "card", "aria-labelledby": "usage-h" }, h("h2", { id: "usage-h" }, t("Usage")), chart));
  drawHead();

  async function status() {
    const s = await get(`/tunnels/${id}/status`);
    fill(badge, tunnelBadge(s.state));
    fill(live, statusView(s, name));
  }
  async function usage() {
    const u = await get(`/tunnels/${id}/usage?step=minute&since_ms=${Date.now() - 6 * 3600_000}`);
    const now = Date.now();
    fill(chart, barChart(u.points.map((p) => ({ at_ms: p.at_ms, value: p.bytes })),
      { stepMs: u.step_ms, fromMs: now - 6 * 3600_000, toMs: now, format: bytes, label: t("Payload per minute, last 6 hours") }));
  }
  async function edit() {
    const changed = await tunnelForm(servers, tun);
    if (changed) { tun = changed; drawHead(); await status(); }
  }
  async function duplicate() {
    const copy = await duplicateForm(tun, servers);
    if (copy) location.hash = `#/tunnels/${copy.id}`;
  }
  async function reissue() {
    const ok = await confirmAction(t("Re-issue the certificate?"),
      t("The panel makes a new key and certificate and gives every node of the tunnel the new pin. Links stay up: the previous pin is accepted until every node runs the new one."), t("Re-issue"));
    if (!ok) return;
    try { tun = await post(`/tunnels/${id}/certificate`); drawHead(); toast(t("New certificate issued")); } catch (err) { toast(err.message, "bad"); }
  }
  async function rotate() {
    const ok = await confirmAction(t("Rotate the credentials of {name}?", { name: tun.name }),
      t("The panel derives a new credential for every origin and pushes it to every node of the tunnel. Links stay up: the listening side accepts the previous and the new credential until every node runs the new one, then the previous ones open nothing."), t("Rotate credentials"));
    if (!ok) return;
    try { tun = await post(`/tunnels/${id}/rotate-credentials`); drawHead(); toast(t("New credentials derived")); } catch (err) { toast(err.message, "bad"); }
  }
  async function reset() {
    const ok = await confirmAction(t("Reset tunnel {name}?", { name: tun.name }),
      t("Every node rebuilds its half from the panel's settings: all links drop and the dialing side starts over at once. Traffic through this tunnel stops until it reconnects."), t("Reset tunnel"));
    if (!ok) return;
    try {
      const out = await post(`/tunnels/${id}/reset`);
      const failed = out.filter((r) => !r.reset);
      toast(failed.length
        ? t("Reset, but not on {servers}", { servers: failed.map((r) => name(r.server_id)).join(", ") })
        : t("Every node rebuilt its half"), failed.length ? "bad" : "ok");
    } catch (err) { toast(err.message, "bad"); }
    await status();
  }
  async function remove() {
    const ok = await confirmAction(t("Delete tunnel {name}?", { name: tun.name }),
      t("Every node drops its half: the relay's users leave through the relay itself again (or through its other tunnels). This cannot be undone."), t("Delete tunnel"));
    if (!ok) return;
    try { await del(`/tunnels/${id}`); location.hash = "#/tunnels"; } catch (err) { toast(err.message, "bad"); }
  }
  await Promise.all([status(), usage()]);
  ctx.every(3000, () => status().catch(() => {}));
  ctx.every(60_000, () => usage().catch(() => {}));
}

/** A profile in words: its port, security, transport and links. */
function profileText(p) {
  const port = String(p.port);
  const n = p.links;
  if (p.security === "reality") {
    return t("{port} REALITY (target {target}, server name {server_name}), {n} link(s) per origin",
      { port, target: p.reality_dest, server_name: p.reality_server_name, n });
  }
  const tr = p.transport;
  // Protocol names and the operator's paths: the same in every language.
  const over = { ws: `WebSocket ${tr.path}`, httpupgrade: `HTTPUpgrade ${tr.path}`, xhttp: `XHTTP ${tr.path} (${tr.mode})`,
    grpc: `gRPC ${tr.service_name}` }[tr.type];
  if (!over) return t("{port} TLS, {n} link(s) per origin", { port, n });
  if (tr.outer_tls) {
    return t("{port} TLS in {transport} behind {cdn}, {n} link(s) per origin",
      { port, transport: over, cdn: tr.outer_tls.server_name, n });
  }
  return t("{port} TLS in {transport}, {n} link(s) per origin", { port, transport: over, n });
}

/** The host of `host:port` (`[v6]:port` unbracketed). */
const hostOf = (a) => a.replace(/:\d*$/, "").replace(/^\[(.*)\]$/, "$1");

function fact(term, ...value) {
  return [h("dt", {}, term), h("dd", {}, ...value)];
}

/** Every node's half as it reports it. */
function statusView(s, name) {
  const relay = s.relay;
  const rows = [];
  for (const o of s.origins) {
    const key = `server-${o.server_id}`;
    const seen = relay && relay.origins ? relay.origins[key] : null;
    const streams = (seen && seen.streams_per_profile) || {};
    const perProfile = seen ? Object.entries(seen.links_per_profile || {}).map(([p, n]) =>
      t("profile {profile}: {links} link(s), {streams} stream(s)", { profile: p, links: Number(n), streams: Number(streams[p] || 0) })).join(", ") : "—";
    const dialing = (o.half && o.half.addresses) || (relay && relay.dialing && relay.dialing[key]) || [];
    rows.push(h("tr", {},
      h("th", { scope: "row" }, name(o.server_id), h("small", { class: "muted block" }, key)),
      h("td", {}, perProfile),
      h("td", { class: "num" }, seen ? num(seen.open_streams) : "—"),
      h("td", {}, dialing.length ? h("ul", { class: "plain" }, dialing.map((a) => h("li", {},
        a.next_attempt_in_ms !== null && a.next_attempt_in_ms !== undefined
          ? t("{target}: {connected}/{wanted} links, next attempt in {wait}",
            { target: a.target, connected: a.connected, wanted: a.wanted, wait: duration(a.next_attempt_in_ms) })
          : t("{target}: {connected}/{wanted} links", { target: a.target, connected: a.connected, wanted: a.wanted }),
        a.last_error ? h("small", { class: "bad block" }, t("last error: {error}", { error: a.last_error })) : null))) : "—"),
      h("td", {}, o.error ? h("small", { class: "bad" }, o.error) : t("ok"))));
  }
  return h("div", {},
    s.error ? h("p", { class: "notice bad" }, s.error) : null,
    relay ? h("p", {}, t("The relay has {n} link(s) up and carried {bytes} since its half started.", { n: s.links, bytes: bytes(relay.payload_bytes) })) : null,
    h("div", { class: "table-wrap" }, h("table", { class: "tunnel-status" },
      h("thead", {}, h("tr", {}, [t("Origin"), t("Links on the relay"), t("Streams"), t("Dialing side (wanted, next attempt, last error)"), t("Node")].map((x) => h("th", { scope: "col" }, x)))),
      h("tbody", {}, rows))));
}

/** The API's limit: a copy of `switchyard_config::MAX_PROFILES` (crates/config/src/tunnel.rs). */
const MAX_PROFILES = 8;

function serverSelect(name, servers, selected) {
  return h("select", { name }, servers.map((s) => h("option", { value: s.id, selected: s.id === selected }, `${s.name} (${s.address})`)));
}

/** The create/edit form; resolves to the saved tunnel. */
function tunnelForm(servers, tun) {
  const editing = Boolean(tun);
  return dialog(editing ? t("Edit tunnel {name}", { name: tun.name }) : t("New tunnel"), (close) => {
    const nameIn = h("input", { name: "name", required: true, maxlength: 64, pattern: "[A-Za-z0-9_.\\-]+", value: tun ? tun.name : "", readonly: editing, autofocus: !editing });
    const relay = serverSelect("relay_server_id", servers, tun ? tun.relay_server_id : servers[0] && servers[0].id);
    const split = (el) => el.value.split(",").map((x) => x.trim()).filter(Boolean);
    // Direct mode: each origin may be dialed at several addresses (blank: its server's).
    const dialedAt = new Map(servers.map((s) => {
      const o = tun && tun.origins.find((x) => x.server_id === s.id);
      return [s.id, h("input", { name: `origin_addresses.${s.id}`, "aria-label": t("{server}: addresses the relay dials (direct mode)", { server: s.name }),
        value: o && o.addresses ? o.addresses.join(", ") : "", placeholder: t("blank: {address}", { address: s.address }) })];
    }));
    const origins = h("fieldset", { class: "field", "data-field": "origin_server_ids" },
      h("legend", {}, t("Origins (where the traffic leaves)")),
      servers.map((s) => h("label", { class: "check" },
        h("input", { type: "checkbox", name: "origin", value: s.id, checked: Boolean(tun && tun.origins.some((o) => o.server_id === s.id)) }), ` ${s.name}`)),
      h("small", { class: "error", role: "alert" }));
    const originAddresses = h("div", { class: "field", "data-field": "origin_addresses" },
      h("label", {}, t("Direct mode: the addresses the relay dials each origin at (host names or IPs, comma-separated; all at once, hot standby)")),
      servers.map((s) => h("label", { class: "block" }, `${s.name} `, dialedAt.get(s.id))),
      h("small", { class: "error", role: "alert" }));
    const mode = h("select", { name: "mode" }, [["reverse", t("Reverse: the origins dial the relay (no open port on origins)")], ["direct", t("Direct: the relay dials the origins")]]
      .map(([v, x]) => h("option", { value: v, selected: (tun ? tun.mode : "reverse") === v }, x)));
    const balancing = h("select", { name: "balancing" }, [["distribute", t("Distribute over every profile")], ["priority", t("Priority: the first profile that is up")]]
      .map(([v, x]) => h("option", { value: v, selected: (tun ? tun.balancing : "distribute") === v }, x)));
    const showDialed = () => { originAddresses.hidden = mode.value !== "direct"; };
    mode.addEventListener("change", showDialed);
    const windowMib = h("input", { name: "window_mib", type: "number", min: 1, max: 64, value: tun ? tun.window_mib : 16 });
    const profiles = h("div", { class: "profiles" });
    const addButton = h("button", { type: "button", "data-add-profile": "", onclick: () => addProfile({ port: 8443, security: "tls", transport: { type: "tcp" }, addresses: [], links: 4 }) }, t("Add profile"));
    // Rows are numbered by position: the API names a profile's errors `profiles[i]…`,
    // so after a removal every later row takes its new index (names, the fields the
    // errors land in, the legend), and a row added later never repeats a name.
    const renumber = () => {
      [...profiles.children].forEach((row, i) => row.number(i));
      const full = profiles.children.length >= MAX_PROFILES;
      addButton.disabled = full;
      addButton.title = full ? t("A tunnel has at most {n} profiles", { n: MAX_PROFILES }) : "";
    };
    const addProfile = (p) => {
      if (profiles.children.length >= MAX_PROFILES) return;
      const port = h("input", { type: "number", min: 1, max: 65535, value: p.port });
      const security = h("select", {},
        [["reality", "REALITY"], ["tls", t("TLS (pinned certificate)")]].map(([v, x]) => h("option", { value: v, selected: (p.security || "tls") === v }, x)));
      const kind = h("select", {},
        [["tcp", "TCP"], ["ws", "WebSocket"], ["httpupgrade", "HTTPUpgrade"], ["xhttp", "XHTTP"], ["grpc", "gRPC"]]
          .map(([v, x]) => h("option", { value: v, selected: p.transport.type === v }, v === "tcp" ? x : t("{transport} (TLS only)", { transport: x }))));
      // Blank: the panel fills in its default target, and the server name from it.
      const dest = h("input", { value: p.reality_dest || "", placeholder: t("blank: the panel's default target") });
      const serverName = h("input", { value: p.reality_server_name || "", placeholder: t("blank: the target's host") });
      let lastDest = dest.value;
      dest.addEventListener("input", () => {
        // A server name that was the old target's host follows the target.
        if (serverName.value === hostOf(lastDest)) serverName.value = "";
        lastDest = dest.value;
      });
      const path = h("input", { value: p.transport.path || "/tunnel" });
      const host = h("input", { value: p.transport.host || "" });
      const serviceName = h("input", { maxlength: 128, value: p.transport.service_name || "tunnel" });
      const xhttpMode = h("select", {},
        [["auto", t("auto (stream-up on HTTP/2, else packet-up)")], ["packet-up", t("packet-up (any CDN)")], ["stream-up", t("stream-up (HTTP/2)")],
          ["stream-one", t("stream-one (one request)")]]
          .map(([v, x]) => h("option", { value: v, selected: (p.transport.mode || "auto") === v }, x)));
      // A CDN in front of the listening side: the dialing side speaks TLS to it first.
      const outer = p.transport.outer_tls || {};
      const cdnName = h("input", { value: outer.server_name || "", placeholder: t("blank: no CDN in front") });
      const cdnCa = h("textarea", { rows: 3, placeholder: t("blank: the web's roots") }, outer.ca_pem || "");
      const addresses = h("input", { value: (p.addresses || []).join(", "), placeholder: t("the relay's address at this port") });
      // A profile's links are its weight: six take three times the streams of two.
      const links = h("input", { type: "number", min: 1, max: 16, value: p.links || 4 });
      const controls = [[port, "port", msg("port")], [security, "security", msg("security")], [kind, "transport", msg("transport")], [links, "links", msg("links")],
        [dest, "reality_dest", msg("REALITY target")], [serverName, "reality_server_name", msg("REALITY server name")],
        [path, "transport.path", msg("path")], [serviceName, "transport.service_name", msg("gRPC service name")],
        [xhttpMode, "transport.mode", msg("XHTTP mode")], [host, "transport.host", msg("host")],
        [cdnName, "transport.outer_tls.server_name", msg("CDN name")], [cdnCa, "transport.outer_tls.ca_pem", msg("CDN root certificate")],
        [addresses, "addresses", msg("link addresses")]];
      for (const [c, key] of controls) c.setAttribute("name", `profiles[0].${key}`);
      const legend = h("legend", {});
      const row = h("fieldset", { class: "profile" },
        legend,
        field(t("Port"), port), field(t("Security"), security), field(t("Transport"), kind),
        field(t("Links per origin"), links, t("This profile's weight: a profile with six links takes three times the streams of one with two")),
        field(t("REALITY target (host:port)"), dest, t("The site a prober sees at this port: everyone but the tunnel is passed to it")),
        field(t("REALITY server name"), serverName),
        field(t("Path"), path), field(t("gRPC service name"), serviceName, t("Letters, digits, _ . and -; the links ask for /NAME/Tun")),
        field(t("XHTTP mode"), xhttpMode, t("How the upload travels; a CDN that buffers request bodies needs packet-up")),
        field(t("Host (sent to the CDN)"), host),
        field(t("CDN name (TLS to the CDN in front)"), cdnName, t("The dialing side speaks TLS to this name first; the CDN passes the requests on, the pinned link runs inside")),
        field(t("CDN root certificate (PEM, optional)"), cdnCa),
        field(t("Link addresses (host:port, comma-separated)"), addresses),
        h("button", { type: "button", class: "danger-text", onclick: () => { row.remove(); renumber(); } }, t("Remove profile")),
        h("small", { class: "error", role: "alert" }));
      row.number = (i) => {
        row.dataset.field = `profiles[${i}]`;
        legend.textContent = t("Profile {n}", { n: i + 1 });
        for (const [c, key, what] of controls) {
          c.setAttribute("name", `profiles[${i}].${key}`);
          c.setAttribute("aria-label", t("Profile {n} {what}", { n: i + 1, what: t(what) }));
          c.closest(".field").dataset.field = `profiles[${i}].${key}`;
        }
      };
      // The target and server name belong to REALITY only.
      const showReality = () => {
        for (const c of [dest, serverName]) c.closest(".field").hidden = security.value !== "reality";
      };
      security.addEventListener("change", showReality);
      // Host and the CDN belong to the transports over HTTP; a path to all but gRPC,
      // which has a service name; the mode to XHTTP.
      const showUpgrade = () => {
        for (const c of [host, cdnName, cdnCa]) c.closest(".field").hidden = kind.value === "tcp";
        path.closest(".field").hidden = kind.value === "tcp" || kind.value === "grpc";
        serviceName.closest(".field").hidden = kind.value !== "grpc";
        xhttpMode.closest(".field").hidden = kind.value !== "xhttp";
      };
      kind.addEventListener("change", showUpgrade);
      row.read = () => ({
        port: Number(port.value),
        security: security.value,
        transport: kind.value === "tcp" ? { type: "tcp" } : {
          type: kind.value, host: host.value.trim(),
          ...(kind.value === "grpc" ? { service_name: serviceName.value.trim() } : { path: path.value }),
          ...(kind.value === "xhttp" ? { mode: xhttpMode.value } : {}),
          ...(cdnName.value.trim() ? { outer_tls: { server_name: cdnName.value.trim(), ...(cdnCa.value.trim() ? { ca_pem: cdnCa.value.trim() + "\n" } : {}) } } : {}),
        },
        addresses: addresses.value.split(",").map((a) => a.trim()).filter(Boolean),
        links: Number(links.value),
        // Blank fields are left out: the panel fills them in (undefined is not sent).
        ...(security.value === "reality" ? {
          reality_dest: dest.value.trim() || undefined,
          reality_server_name: serverName.value.trim() || undefined,
        } : {}),
      });
      profiles.append(row);
      renumber();
      showReality();
      showUpgrade();
    };
    // A new tunnel's first profile starts on REALITY, as the API's default.
    for (const p of tun ? tun.profiles : [{ port: 7443, security: "reality", transport: { type: "tcp" }, addresses: [], links: 4 }]) addProfile(p);
    const rules = tun ? tun.rules : { domains: [], suffixes: [], cidrs: [], ports: [] };
    const list = (n, v) => h("input", { name: `rules.${n}`, value: (v || []).join(", ") });
    const rDomains = list("domains", rules.domains);
    const rSuffixes = list("suffixes", rules.suffixes);
    const rCidrs = list("cidrs", rules.cidrs);
    const rPorts = list("ports", rules.ports);
    const enabled = h("input", { type: "checkbox", name: "enabled", checked: tun ? tun.enabled : true });
    const form = h("form", {},
      field(t("Name"), nameIn, editing ? t("Fixed after saving (its keys derive from it): duplicate the tunnel for another name") : t("Letters, digits, _ . - ; it cannot change later")),
      field(t("Relay (where users connect)"), relay), origins,
      field(t("Mode"), mode), originAddresses, field(t("Balancing between profiles"), balancing),
      field(t("Stream window (MiB)"), windowMib),
      h("h3", {}, t("Profiles")), profiles,
      addButton,
      h("details", {}, h("summary", {}, t("Routing rules (when the relay carries several tunnels)")),
        field(t("Domains"), rDomains), field(t("Domain suffixes"), rSuffixes), field(t("CIDRs"), rCidrs), field(t("Ports"), rPorts)),
      h("label", { class: "check" }, enabled, " ", t("Enabled")),
      h("p", { class: "form-error", role: "alert" }),
      h("div", { class: "actions" },
        h("button", { type: "button", onclick: () => close(undefined) }, t("Cancel")),
        h("button", { type: "submit", class: "primary" }, editing ? t("Save") : t("Create tunnel"))));
    showDialed();
    form.addEventListener("submit", async (e) => {
      e.preventDefault();
      showError(form, null);
      const originIds = [...origins.querySelectorAll("input:checked")].map((c) => Number(c.value));
      const body = {
        name: nameIn.value.trim(), relay_server_id: Number(relay.value),
        origin_server_ids: originIds,
        origin_addresses: originIds.map((id) => ({ server_id: id, addresses: split(dialedAt.get(id)) })).filter((o) => o.addresses.length),
        mode: mode.value, balancing: balancing.value, window_mib: Number(windowMib.value),
        profiles: [...profiles.children].map((r) => r.read()),
        rules: { domains: split(rDomains), suffixes: split(rSuffixes), cidrs: split(rCidrs), ports: split(rPorts).map(Number) },
        enabled: enabled.checked,
      };
      try {
        close(editing ? await put(`/tunnels/${tun.id}`, body) : await post("/tunnels", body));
      } catch (err) {
        showError(form, err);
      }
    });
    return form;
  });
}

function duplicateForm(tun, servers) {
  return dialog(t("Duplicate {name}", { name: tun.name }), (close) => {
    const nameIn = h("input", { name: "name", required: true, maxlength: 64, value: `${tun.name}-2`, autofocus: true });
    const relay = serverSelect("relay_server_id", servers.filter((s) => !tun.origins.some((o) => o.server_id === s.id)), null);
    const form = h("form", {},
      h("p", {}, t("A copy for another relay, with the same origins and settings but its own name, certificate and credentials: nothing of this tunnel opens the copy, or the other way round.")),
      field(t("Name"), nameIn), field(t("Relay"), relay),
      h("p", { class: "form-error", role: "alert" }),
      h("div", { class: "actions" },
        h("button", { type: "button", onclick: () => close(undefined) }, t("Cancel")),
        h("button", { type: "submit", class: "primary" }, t("Duplicate"))));
    form.addEventListener("submit", async (e) => {
      e.preventDefault();
      showError(form, null);
      try {
        close(await post(`/tunnels/${tun.id}/duplicate`, { name: nameIn.value.trim(), relay_server_id: Number(relay.value) }));
      } catch (err) { showError(form, err); }
    });
    return form;
  });
}
