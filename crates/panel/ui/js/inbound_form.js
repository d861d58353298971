// Creating and editing an inbound: its server, display name, protocol, port,
// transport, security and weight.

import { h, field, dialog, showError } from "./dom.js";
import { post, put } from "./api.js";

/** Resolves to the saved inbound, or nothing when cancelled. */
export function inboundForm(servers, inbound) {
  const editing = Boolean(inbound);
  const i = inbound || {
    server_id: servers[0] && servers[0].id, name: "", protocol: "vless", port: 443,
    transport: { type: "tcp" }, security: { type: "tls", certificate: { source: "self_signed" } },
    host: null, sni: null, coefficient: 1, method: null,
  };
  return dialog(editing ? `Edit inbound ${i.name}` : "New inbound", (close) => {
    const server = h("select", { name: "server_id", disabled: editing },
      servers.map((s) => h("option", { value: s.id, selected: s.id === i.server_id }, s.name)));
    const name = h("input", { name: "name", required: true, maxlength: 64, value: i.name, placeholder: "🇺🇸 New York", autofocus: true });
    const protocol = h("select", { name: "protocol" },
      [["vless", "VLESS"], ["trojan", "Trojan"], ["shadowsocks", "Shadowsocks 2022"]]
        .map(([v, t]) => h("option", { value: v, selected: i.protocol === v }, t)));
    const method = h("select", { name: "method" },
      ["2022-blake3-aes-128-gcm", "2022-blake3-aes-256-gcm", "2022-blake3-chacha20-poly1305"]
        .map((m) => h("option", { value: m, selected: i.method === m }, m)));
    const port = h("input", { name: "port", type: "number", min: 1, max: 65535, required: true, value: i.port });
    const transport = h("select", { name: "transport" },
      [["tcp", "TCP"], ["ws", "WebSocket"]].map(([v, t]) => h("option", { value: v, selected: i.transport.type === v }, t)));
    const path = h("input", { name: "transport.path", value: i.transport.path || "/", placeholder: "/ws" });
    const wsHost = h("input", { name: "transport.host", value: i.transport.host || "" });
    const tls = i.security.type === "tls" ? (i.security.certificate.source === "files" ? "files" : "self_signed") : "none";
    const security = h("select", { name: "security" },
      [["self_signed", "TLS, self-signed certificate (first looks, tests)"], ["files", "TLS, certificate files on the node"], ["none", "None"]]
        .map(([v, t]) => h("option", { value: v, selected: tls === v }, t)));
    const certFile = h("input", { name: "security.certificate.cert", value: (i.security.certificate && i.security.certificate.cert) || "", placeholder: "/etc/ssl/fullchain.pem" });
    const keyFile = h("input", { name: "security.certificate.key", value: (i.security.certificate && i.security.certificate.key) || "", placeholder: "/etc/ssl/privkey.pem" });
    const host = h("input", { name: "host", value: i.host || "", placeholder: "the server's address" });
    const sni = h("input", { name: "sni", value: i.sni || "" });
    const coefficient = h("input", { name: "coefficient", type: "number", step: "0.1", min: "0.1", value: i.coefficient });
    const ws = h("div", { class: "group" }, field("Path", path), field("Host header", wsHost, "Any when empty"));
    const files = h("div", { class: "group" }, field("Certificate file", certFile), field("Key file", keyFile));
    const ss = h("div", { class: "group" }, field("Method", method));
    const sync = () => {
      ws.hidden = transport.value !== "ws";
      files.hidden = security.value !== "files";
      ss.hidden = protocol.value !== "shadowsocks";
    };
    for (const c of [transport, security, protocol]) c.addEventListener("change", sync);
    sync();
    const form = h("form", {},
      field("Server", server), field("Display name", name, "What users see in their app"),
      field("Protocol", protocol), ss, field("Port", port),
      field("Transport", transport), ws, field("Security", security), files,
      field("Client address", host, "The address clients dial; the server's when empty"),
      field("TLS server name (SNI)", sni),
      field("Coefficient", coefficient, "Weight in round-robin: 2 takes about twice the users of 1"),
      h("p", { class: "form-error", role: "alert" }),
      h("div", { class: "actions" },
        h("button", { type: "button", onclick: () => close(undefined) }, "Cancel"),
        h("button", { type: "submit", class: "primary" }, editing ? "Save" : "Create inbound")));
    form.addEventListener("submit", async (e) => {
      e.preventDefault();
      showError(form, null);
      const body = {
        server_id: Number(server.value), name: name.value.trim(), protocol: protocol.value,
        port: Number(port.value),
        transport: transport.value === "ws" ? { type: "ws", path: path.value, host: wsHost.value.trim() || undefined } : { type: "tcp" },
        security: security.value === "none" ? { type: "none" }
          : { type: "tls", certificate: security.value === "files" ? { source: "files", cert: certFile.value, key: keyFile.value } : { source: "self_signed" } },
        host: host.value.trim() || null, sni: sni.value.trim() || null,
        coefficient: Number(coefficient.value), method: protocol.value === "shadowsocks" ? method.value : null,
      };
      try {
        close(editing ? await put(`/inbounds/${i.id}`, body) : await post("/inbounds", body));
      } catch (err) {
        showError(form, err);
      }
    });
    return form;
  });
}
