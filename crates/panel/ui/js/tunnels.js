// Tunnels: the list with live state badges, the form (the name locked after saving;
// each profile's security, REALITY by default on a new tunnel's first, with its
// target, and its links; in direct mode, each origin's addresses), a tunnel's page with the live status of every node, the REALITY public
// key, Reset, Duplicate, re-issuing the certificate, and the usage chart.

import { h, fill, field, dialog, showError, confirmAction, toast } from "./dom.js";
import { get, post, put, del } from "./api.js";
import { bytes, duration } from "./format.js";
import { barChart } from "./chart.js";

/** The state in words, coloured by what it means. */
export function tunnelBadge(state) {
  const kind = !state ? "unknown" : state.startsWith("Connections") ? "good" : state === "No connections" ? "warn" : "bad";
  return h("span", { class: `badge tunnel-${kind}`, "data-tunnel-state": "" }, state || "…");
}

async function serverNames() {
  const servers = await get("/servers");
  return { servers, name: (id) => servers.find((s) => s.id === id)?.name || `server ${id}` };
}

export async function tunnelsPage(main, ctx) {
  const { servers, name } = await serverNames();
  const list = h("div", {});
  fill(main,
    h("div", { class: "page-head" }, h("h1", {}, "Tunnels"),
      h("div", { class: "actions" }, h("button", { type: "button", class: "primary", "data-new-tunnel": "", onclick: create }, "New tunnel"))),
    h("p", { class: "muted" }, "A tunnel carries a relay's users out through its origins: users connect to the relay and leave from an origin, each user pinned to one origin."),
    list);
  let tunnels = [];
  async function create() {
    const t = await tunnelForm(servers, null);
    if (t) location.hash = `#/tunnels/${t.id}`;
  }
  async function load() {
    tunnels = await get("/tunnels");
    fill(list, tunnels.length ? h("div", { class: "table-wrap" }, h("table", {},
      h("thead", {}, h("tr", {}, ["Tunnel", "State", "Relay", "Origins", "Mode"].map((t) => h("th", { scope: "col" }, t)))),
      h("tbody", {}, tunnels.map((t) => h("tr", { "data-tunnel": t.id },
        h("th", { scope: "row" }, h("a", { href: `#/tunnels/${t.id}` }, t.name), t.enabled ? null : h("small", { class: "muted block" }, "disabled")),
        h("td", { "data-state-of": t.id }, tunnelBadge(null)),
        h("td", {}, name(t.relay_server_id)),
        h("td", {}, t.origins.map((o) => name(o.server_id)).join(", ")),
        h("td", {}, t.mode)))))) : h("p", { class: "muted" }, "No tunnel yet."));
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

export async function tunnelPage(main, id, ctx) {
  const { servers, name } = await serverNames();
  let t = await get(`/tunnels/${id}`);
  const badge = h("span", {});
  const live = h("div", {});
  const chart = h("div", {});
  const head = h("div", {});
  const drawHead = () => fill(head,
    h("div", { class: "page-head" },
      h("h1", {}, "Tunnel ", h("span", { class: "tunnel-name" }, t.name)), badge,
      h("div", { class: "actions" },
        h("button", { type: "button", onclick: edit }, "Edit"),
        h("button", { type: "button", "data-duplicate": "", onclick: duplicate }, "Duplicate…"),
        h("button", { type: "button", onclick: reissue }, "Re-issue certificate…"),
        h("button", { type: "button", "data-rotate": "", onclick: rotate }, "Rotate credentials…"),
        h("button", { type: "button", class: "danger", "data-reset": "", onclick: reset }, "Reset…"),
        h("button", { type: "button", class: "danger-text", onclick: remove }, "Delete"))),
    h("dl", { class: "facts" },
      fact("Relay", name(t.relay_server_id)),
      fact("Origins", t.origins.map((o) => `${name(o.server_id)} (${o.name}${t.mode === "direct" && o.addresses && o.addresses.length ? `, dialed at ${o.addresses.join(", ")}` : ""})`).join(", ")),
      fact("Mode", t.mode === "direct" ? "Direct: the relay dials the origins" : "Reverse: the origins dial the relay"),
      fact("Balancing", t.balancing),
      fact("Window", `${t.window_mib} MiB`),
      fact("Profiles", t.profiles.map(profileText).join(" · ")),
      fact("REALITY public key", h("code", { "data-reality-public-key": "" }, t.reality_public_key || "none yet: made with the tunnel's first REALITY profile")),
      fact("Enabled", t.enabled ? "yes" : "no: no node runs it"),
      fact("Certificate pin", t.certificate_pin + (t.previous_pin ? " (the previous pin is still accepted while the new one rolls out)" : "")),
      fact("Credentials", t.credential_epoch === 0 ? "as first derived (never rotated)" : `rotated ${t.credential_epoch} time(s)`,
        t.previous_credential_epoch !== null && t.previous_credential_epoch !== undefined ? h("span", { "data-rotating": "" }, " (the previous ones are still accepted while the new ones roll out)") : null)));
  fill(main, head,
    h("section", { class: "card", "aria-labelledby": "live-h" }, h("h2", { id: "live-h" }, "Live status"), live),
    h("section", { class: "card", "aria-labelledby": "usage-h" }, h("h2", { id: "usage-h" }, "Usage"), chart));
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
      { stepMs: u.step_ms, fromMs: now - 6 * 3600_000, toMs: now, format: bytes, label: "Payload per minute, last 6 hours" }));
  }
  async function edit() {
    const changed = await tunnelForm(servers, t);
    if (changed) { t = changed; drawHead(); await status(); }
  }
  async function duplicate() {
    const copy = await duplicateForm(t, servers);
    if (copy) location.hash = `#/tunnels/${copy.id}`;
  }
  async function reissue() {
    const ok = await confirmAction("Re-issue the certificate?",
      "The panel makes a new key and certificate and gives every node of the tunnel the new pin. Links stay up: the previous pin is accepted until every node runs the new one.", "Re-issue");
    if (!ok) return;
    try { t = await post(`/tunnels/${id}/certificate`); drawHead(); toast("New certificate issued"); } catch (err) { toast(err.message, "bad"); }
  }
  async function rotate() {
    const ok = await confirmAction(`Rotate the credentials of ${t.name}?`,
      "The panel derives a new credential for every origin and pushes it to every node of the tunnel. Links stay up: the listening side accepts the previous and the new credential until every node runs the new one, then the previous ones open nothing.", "Rotate credentials");
    if (!ok) return;
    try { t = await post(`/tunnels/${id}/rotate-credentials`); drawHead(); toast("New credentials derived"); } catch (err) { toast(err.message, "bad"); }
  }
  async function reset() {
    const ok = await confirmAction(`Reset tunnel ${t.name}?`,
      "Every node rebuilds its half from the panel's settings: all links drop and the dialing side starts over at once. Traffic through this tunnel stops until it reconnects.", "Reset tunnel");
    if (!ok) return;
    try {
      const out = await post(`/tunnels/${id}/reset`);
      const failed = out.filter((r) => !r.reset);
      toast(failed.length ? `Reset, but not on ${failed.map((r) => name(r.server_id)).join(", ")}` : "Every node rebuilt its half", failed.length ? "bad" : "ok");
    } catch (err) { toast(err.message, "bad"); }
    await status();
  }
  async function remove() {
    const ok = await confirmAction(`Delete tunnel ${t.name}?`,
      "Every node drops its half: the relay's users leave through the relay itself again (or through its other tunnels). This cannot be undone.", "Delete tunnel");
    if (!ok) return;
    try { await del(`/tunnels/${id}`); location.hash = "#/tunnels"; } catch (err) { toast(err.message, "bad"); }
  }
  await Promise.all([status(), usage()]);
  ctx.every(3000, () => status().catch(() => {}));
  ctx.every(60_000, () => usage().catch(() => {}));
}

/** A profile in words: its port, security, transport and links. */
function profileText(p) {
  const links = `, ${p.links} link(s) per origin`;
  if (p.security === "reality") return `${p.port} REALITY (target ${p.reality_dest}, server name ${p.reality_server_name})${links}`;
  const tr = p.transport;
  const over = { ws: `WebSocket ${tr.path}`, httpupgrade: `HTTPUpgrade ${tr.path}`, xhttp: `XHTTP ${tr.path} (${tr.mode})`,
    grpc: `gRPC ${tr.service_name}` }[tr.type];
  const cdn = tr.outer_tls ? ` behind ${tr.outer_tls.server_name}` : "";
  return `${p.port} ${over ? `TLS in ${over}${cdn}` : "TLS"}${links}`;
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
    const perProfile = seen ? Object.entries(seen.links_per_profile || {}).map(([p, n]) => `profile ${p}: ${n} link(s), ${streams[p] || 0} stream(s)`).join(", ") : "—";
    const dialing = (o.half && o.half.addresses) || (relay && relay.dialing && relay.dialing[key]) || [];
    rows.push(h("tr", {},
      h("th", { scope: "row" }, name(o.server_id), h("small", { class: "muted block" }, key)),
      h("td", {}, perProfile),
      h("td", { class: "num" }, seen ? String(seen.open_streams) : "—"),
      h("td", {}, dialing.length ? h("ul", { class: "plain" }, dialing.map((a) => h("li", {},
        `${a.target}: ${a.connected}/${a.wanted} links`,
        a.next_attempt_in_ms !== null && a.next_attempt_in_ms !== undefined ? `, next attempt in ${duration(a.next_attempt_in_ms)}` : "",
        a.last_error ? h("small", { class: "bad block" }, `last error: ${a.last_error}`) : null))) : "—"),
      h("td", {}, o.error ? h("small", { class: "bad" }, o.error) : "ok")));
  }
  return h("div", {},
    s.error ? h("p", { class: "notice bad" }, s.error) : null,
    relay ? h("p", {}, `The relay has ${s.links} link(s) up and carried ${bytes(relay.payload_bytes)} since its half started.`) : null,
    h("div", { class: "table-wrap" }, h("table", { class: "tunnel-status" },
      h("thead", {}, h("tr", {}, ["Origin", "Links on the relay", "Streams", "Dialing side (wanted, next attempt, last error)", "Node"].map((x) => h("th", { scope: "col" }, x)))),
      h("tbody", {}, rows))));
}

/** The API's limit: a copy of `switchyard_config::MAX_PROFILES` (crates/config/src/tunnel.rs). */
const MAX_PROFILES = 8;

function serverSelect(name, servers, selected) {
  return h("select", { name }, servers.map((s) => h("option", { value: s.id, selected: s.id === selected }, `${s.name} (${s.address})`)));
}

/** The create/edit form; resolves to the saved tunnel. */
function tunnelForm(servers, t) {
  const editing = Boolean(t);
  return dialog(editing ? `Edit tunnel ${t.name}` : "New tunnel", (close) => {
    const nameIn = h("input", { name: "name", required: true, maxlength: 64, pattern: "[A-Za-z0-9_.\\-]+", value: t ? t.name : "", readonly: editing, autofocus: !editing });
    const relay = serverSelect("relay_server_id", servers, t ? t.relay_server_id : servers[0] && servers[0].id);
    const split = (el) => el.value.split(",").map((x) => x.trim()).filter(Boolean);
    // Direct mode: each origin may be dialed at several addresses (blank: its server's).
    const dialedAt = new Map(servers.map((s) => {
      const o = t && t.origins.find((x) => x.server_id === s.id);
      return [s.id, h("input", { name: `origin_addresses.${s.id}`, "aria-label": `${s.name}: addresses the relay dials (direct mode)`,
        value: o && o.addresses ? o.addresses.join(", ") : "", placeholder: `blank: ${s.address}` })];
    }));
    const origins = h("fieldset", { class: "field", "data-field": "origin_server_ids" },
      h("legend", {}, "Origins (where the traffic leaves)"),
      servers.map((s) => h("label", { class: "check" },
        h("input", { type: "checkbox", name: "origin", value: s.id, checked: Boolean(t && t.origins.some((o) => o.server_id === s.id)) }), ` ${s.name}`)),
      h("small", { class: "error", role: "alert" }));
    const originAddresses = h("div", { class: "field", "data-field": "origin_addresses" },
      h("label", {}, "Direct mode: the addresses the relay dials each origin at (host names or IPs, comma-separated; all at once, hot standby)"),
      servers.map((s) => h("label", { class: "block" }, `${s.name} `, dialedAt.get(s.id))),
      h("small", { class: "error", role: "alert" }));
    const mode = h("select", { name: "mode" }, [["reverse", "Reverse: the origins dial the relay (no open port on origins)"], ["direct", "Direct: the relay dials the origins"]]
      .map(([v, x]) => h("option", { value: v, selected: (t ? t.mode : "reverse") === v }, x)));
    const balancing = h("select", { name: "balancing" }, [["distribute", "Distribute over every profile"], ["priority", "Priority: the first profile that is up"]]
      .map(([v, x]) => h("option", { value: v, selected: (t ? t.balancing : "distribute") === v }, x)));
    const showDialed = () => { originAddresses.hidden = mode.value !== "direct"; };
    mode.addEventListener("change", showDialed);
    const windowMib = h("input", { name: "window_mib", type: "number", min: 1, max: 64, value: t ? t.window_mib : 16 });
    const profiles = h("div", { class: "profiles" });
    const addButton = h("button", { type: "button", "data-add-profile": "", onclick: () => addProfile({ port: 8443, security: "tls", transport: { type: "tcp" }, addresses: [], links: 4 }) }, "Add profile");
    // Rows are numbered by position: the API names a profile's errors `profiles[i]…`,
    // so after a removal every later row takes its new index (names, the fields the
    // errors land in, the legend), and a row added later never repeats a name.
    const renumber = () => {
      [...profiles.children].forEach((row, i) => row.number(i));
      const full = profiles.children.length >= MAX_PROFILES;
      addButton.disabled = full;
      addButton.title = full ? `A tunnel has at most ${MAX_PROFILES} profiles` : "";
    };
    const addProfile = (p) => {
      if (profiles.children.length >= MAX_PROFILES) return;
      const port = h("input", { type: "number", min: 1, max: 65535, value: p.port });
      const security = h("select", {},
        [["reality", "REALITY"], ["tls", "TLS (pinned certificate)"]].map(([v, x]) => h("option", { value: v, selected: (p.security || "tls") === v }, x)));
      const kind = h("select", {},
        [["tcp", "TCP"], ["ws", "WebSocket (TLS only)"], ["httpupgrade", "HTTPUpgrade (TLS only)"], ["xhttp", "XHTTP (TLS only)"],
          ["grpc", "gRPC (TLS only)"]].map(([v, x]) => h("option", { value: v, selected: p.transport.type === v }, x)));
      // Blank: the panel fills in its default target, and the server name from it.
      const dest = h("input", { value: p.reality_dest || "", placeholder: "blank: the panel's default target" });
      const serverName = h("input", { value: p.reality_server_name || "", placeholder: "blank: the target's host" });
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
        [["auto", "auto (stream-up on HTTP/2, else packet-up)"], ["packet-up", "packet-up (any CDN)"], ["stream-up", "stream-up (HTTP/2)"],
          ["stream-one", "stream-one (one request)"]]
          .map(([v, x]) => h("option", { value: v, selected: (p.transport.mode || "auto") === v }, x)));
      // A CDN in front of the listening side: the dialing side speaks TLS to it first.
      const outer = p.transport.outer_tls || {};
      const cdnName = h("input", { value: outer.server_name || "", placeholder: "blank: no CDN in front" });
      const cdnCa = h("textarea", { rows: 3, placeholder: "blank: the web's roots" }, outer.ca_pem || "");
      const addresses = h("input", { value: (p.addresses || []).join(", "), placeholder: "the relay's address at this port" });
      // A profile's links are its weight: six take three times the streams of two.
      const links = h("input", { type: "number", min: 1, max: 16, value: p.links || 4 });
      const controls = [[port, "port", "port"], [security, "security", "security"], [kind, "transport", "transport"], [links, "links", "links"],
        [dest, "reality_dest", "REALITY target"], [serverName, "reality_server_name", "REALITY server name"],
        [path, "transport.path", "path"], [serviceName, "transport.service_name", "gRPC service name"],
        [xhttpMode, "transport.mode", "XHTTP mode"], [host, "transport.host", "host"],
        [cdnName, "transport.outer_tls.server_name", "CDN name"], [cdnCa, "transport.outer_tls.ca_pem", "CDN root certificate"],
        [addresses, "addresses", "link addresses"]];
      for (const [c, key] of controls) c.setAttribute("name", `profiles[0].${key}`);
      const legend = h("legend", {});
      const row = h("fieldset", { class: "profile" },
        legend,
        field("Port", port), field("Security", security), field("Transport", kind),
        field("Links per origin", links, "This profile's weight: a profile with six links takes three times the streams of one with two"),
        field("REALITY target (host:port)", dest, "The site a prober sees at this port: everyone but the tunnel is passed to it"),
        field("REALITY server name", serverName),
        field("Path", path), field("gRPC service name", serviceName, "Letters, digits, _ . and -; the links ask for /NAME/Tun"),
        field("XHTTP mode", xhttpMode, "How the upload travels; a CDN that buffers request bodies needs packet-up"),
        field("Host (sent to the CDN)", host),
        field("CDN name (TLS to the CDN in front)", cdnName, "The dialing side speaks TLS to this name first; the CDN passes the requests on, the pinned link runs inside"),
        field("CDN root certificate (PEM, optional)", cdnCa),
        field("Link addresses (host:port, comma-separated)", addresses),
        h("button", { type: "button", class: "danger-text", onclick: () => { row.remove(); renumber(); } }, "Remove profile"),
        h("small", { class: "error", role: "alert" }));
      row.number = (i) => {
        row.dataset.field = `profiles[${i}]`;
        legend.textContent = `Profile ${i + 1}`;
        for (const [c, key, what] of controls) {
          c.setAttribute("name", `profiles[${i}].${key}`);
          c.setAttribute("aria-label", `Profile ${i + 1} ${what}`);
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
    for (const p of t ? t.profiles : [{ port: 7443, security: "reality", transport: { type: "tcp" }, addresses: [], links: 4 }]) addProfile(p);
    const rules = t ? t.rules : { domains: [], suffixes: [], cidrs: [], ports: [] };
    const list = (n, v) => h("input", { name: `rules.${n}`, value: (v || []).join(", ") });
    const rDomains = list("domains", rules.domains);
    const rSuffixes = list("suffixes", rules.suffixes);
    const rCidrs = list("cidrs", rules.cidrs);
    const rPorts = list("ports", rules.ports);
    const enabled = h("input", { type: "checkbox", name: "enabled", checked: t ? t.enabled : true });
    const form = h("form", {},
      field("Name", nameIn, editing ? "Fixed after saving (its keys derive from it): duplicate the tunnel for another name" : "Letters, digits, _ . - ; it cannot change later"),
      field("Relay (where users connect)", relay), origins,
      field("Mode", mode), originAddresses, field("Balancing between profiles", balancing),
      field("Stream window (MiB)", windowMib),
      h("h3", {}, "Profiles"), profiles,
      addButton,
      h("details", {}, h("summary", {}, "Routing rules (when the relay carries several tunnels)"),
        field("Domains", rDomains), field("Domain suffixes", rSuffixes), field("CIDRs", rCidrs), field("Ports", rPorts)),
      h("label", { class: "check" }, enabled, " Enabled"),
      h("p", { class: "form-error", role: "alert" }),
      h("div", { class: "actions" },
        h("button", { type: "button", onclick: () => close(undefined) }, "Cancel"),
        h("button", { type: "submit", class: "primary" }, editing ? "Save" : "Create tunnel")));
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
        close(editing ? await put(`/tunnels/${t.id}`, body) : await post("/tunnels", body));
      } catch (err) {
        showError(form, err);
      }
    });
    return form;
  });
}

function duplicateForm(t, servers) {
  return dialog(`Duplicate ${t.name}`, (close) => {
    const nameIn = h("input", { name: "name", required: true, maxlength: 64, value: `${t.name}-2`, autofocus: true });
    const relay = serverSelect("relay_server_id", servers.filter((s) => !t.origins.some((o) => o.server_id === s.id)), null);
    const form = h("form", {},
      h("p", {}, "A copy for another relay, with the same origins and settings but its own name, certificate and credentials: nothing of this tunnel opens the copy, or the other way round."),
      field("Name", nameIn), field("Relay", relay),
      h("p", { class: "form-error", role: "alert" }),
      h("div", { class: "actions" },
        h("button", { type: "button", onclick: () => close(undefined) }, "Cancel"),
        h("button", { type: "submit", class: "primary" }, "Duplicate")));
    form.addEventListener("submit", async (e) => {
      e.preventDefault();
      showError(form, null);
      try {
        close(await post(`/tunnels/${t.id}/duplicate`, { name: nameIn.value.trim(), relay_server_id: Number(relay.value) }));
      } catch (err) { showError(form, err); }
    });
    return form;
  });
}
