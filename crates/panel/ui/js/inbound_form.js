// Creating and editing an inbound: its server, display name, protocol, port,
// transport (TCP, WebSocket or HTTPUpgrade, the last two with a path and a Host
// header, or gRPC with a service name and Xray's multi mode; these and XHTTP with
// the trusted proxies of a CDN in front), security (TLS or
// REALITY), flow and weight; Hysteria 2 (QUIC under TLS, no transport or REALITY)
// with Salamander (its password write-only), up/down Mbit/s, UDP, hop ports and
// their interval; its rules (block BitTorrent, blocked and direct destinations, into a
// tunnel its server relays). A
// REALITY inbound's public
// key (the panel makes the pair; the private key is never shown) is shown once it is
// saved, with a copy button.

import { h, field, dialog, showError, copy } from "./dom.js";
import { post, put } from "./api.js";
import { rulesSection } from "./inbound_rules.js";
import { t } from "./i18n.js";

/** Resolves to the saved inbound, or nothing when cancelled. */
export function inboundForm(servers, inbound, tunnels) {
  const editing = Boolean(inbound);
  const i = inbound || {
    server_id: servers[0] && servers[0].id, name: "", protocol: "vless", port: 443,
    transport: { type: "tcp" }, security: { type: "tls", certificate: { source: "self_signed" } },
    host: null, sni: null, coefficient: 1, method: null, flow: null,
  };
  return dialog(editing ? t("Edit inbound {name}", { name: i.name }) : t("New inbound"), (close) => {
    const server = h("select", { name: "server_id", disabled: editing },
      servers.map((s) => h("option", { value: s.id, selected: s.id === i.server_id }, s.name)));
    const name = h("input", { name: "name", required: true, maxlength: 64, value: i.name, placeholder: t("🇺🇸 New York"), autofocus: true });
    const protocol = h("select", { name: "protocol" },
      [["vless", "VLESS"], ["trojan", "Trojan"], ["shadowsocks", "Shadowsocks 2022"], ["hysteria2", "Hysteria 2"]]
        .map(([v, label]) => h("option", { value: v, selected: i.protocol === v }, label)));
    const method = h("select", { name: "method" },
      ["2022-blake3-aes-128-gcm", "2022-blake3-aes-256-gcm", "2022-blake3-chacha20-poly1305"]
        .map((m) => h("option", { value: m, selected: i.method === m }, m)));
    const port = h("input", { name: "port", type: "number", min: 1, max: 65535, required: true, value: i.port });
    const transport = h("select", { name: "transport" },
      [["tcp", "TCP"], ["ws", "WebSocket"], ["httpupgrade", "HTTPUpgrade"], ["grpc", "gRPC"], ["xhttp", "XHTTP"]].map(([v, label]) => h("option", { value: v, selected: i.transport.type === v }, label)));
    const path = h("input", { name: "transport.path", value: i.transport.path || "/", placeholder: "/ws" });
    const wsHost = h("input", { name: "transport.host", value: i.transport.host || "" });
    const serviceName = h("input", { name: "transport.service_name", maxlength: 128,
      value: i.transport.service_name || "", placeholder: "tun" });
    const multiMode = h("input", { type: "checkbox", name: "transport.multi_mode", checked: Boolean(i.transport.multi_mode) });
    const xhttpMode = h("select", { name: "transport.mode" },
      [["auto", t("auto (the client picks)")], ["packet-up", t("packet-up (any CDN)")], ["stream-up", t("stream-up (HTTP/2, REALITY)")],
        ["stream-one", t("stream-one (one request)")]]
        .map(([v, label]) => h("option", { value: v, selected: (i.transport.mode || "auto") === v }, label)));
    const tls = i.security.type === "reality" ? "reality"
      : i.security.type === "tls" ? (["files", "acme"].includes(i.security.certificate.source) ? i.security.certificate.source : "self_signed") : "none";
    const security = h("select", { name: "security" },
      [["self_signed", t("TLS, self-signed certificate (first looks, tests)")], ["files", t("TLS, certificate files on the node")],
        ["acme", t("TLS, certificate by ACME (Let's Encrypt), kept by the node")],
        ["reality", t("REALITY (VLESS over TCP: borrows a real site's TLS)")], ["none", t("None")]]
        .map(([v, label]) => h("option", { value: v, selected: tls === v }, label)));
    const r = i.security.type === "reality" ? i.security : {};
    const dest = h("input", { name: "security.dest", value: r.dest || "", placeholder: "www.example.com:443" });
    const serverNames = h("input", { name: "security.server_names", value: (r.server_names || []).join(", "), placeholder: "www.example.com" });
    const shortIds = h("input", { name: "security.short_ids", value: (r.short_ids || []).join(", "), placeholder: t("made by the panel when empty") });
    const fingerprint = h("select", { name: "security.fingerprint" },
      ["chrome", "firefox", "safari", "ios", "android", "edge", "360", "qq", "random"]
        .map((f) => h("option", { value: f, selected: (r.fingerprint || "chrome") === f }, f)));
    const maxTimeDiff = h("input", { name: "security.max_time_diff_ms", type: "number", min: 0, max: 3600000, step: 1000,
      value: r.max_time_diff_ms === undefined ? 60000 : r.max_time_diff_ms });
    const flow = h("select", { name: "flow" },
      [["", t("None")], ["xtls-rprx-vision", "xtls-rprx-vision (Vision)"]]
        .map(([v, label]) => h("option", { value: v, selected: (i.flow || "") === v }, label)));
    const list = (input) => input.value.split(/[\s,]+/).filter(Boolean);
    const certFile = h("input", { name: "security.certificate.cert", value: (i.security.certificate && i.security.certificate.cert) || "", placeholder: "/etc/ssl/fullchain.pem" });
    const keyFile = h("input", { name: "security.certificate.key", value: (i.security.certificate && i.security.certificate.key) || "", placeholder: "/etc/ssl/privkey.pem" });
    const host = h("input", { name: "host", value: i.host || "", placeholder: t("the server's address") });
    const sni = h("input", { name: "sni", value: i.sni || "" });
    const coefficient = h("input", { name: "coefficient", type: "number", step: "0.1", min: "0.1", value: i.coefficient });
    const ws = h("div", { class: "group" }, field(t("Path"), path), field(t("Host header"), wsHost, t("Any when empty")));
    const grpc = h("div", { class: "group" },
      field(t("Service name"), serviceName, t("Letters, digits, _ . and -; clients ask for /NAME/Tun")),
      field(t("Multi mode"), multiMode, t("For Xray-based apps (v2rayN, v2rayNG, Streisand...); the others use plain gun, which the node serves too")));
    const xhttp = h("div", { class: "group" },
      field(t("Mode"), xhttpMode, t("How clients send the upload; only Xray-based apps run XHTTP (sing-box and Clash subscriptions leave it out)")));
    const trustedProxies = h("textarea", { name: "trusted_proxies", rows: 3, spellcheck: "false",
      placeholder: "173.245.48.0/20\n2400:cb00::/32" }, (i.trusted_proxies || []).join("\n"));
    const behindCdn = h("div", { class: "group" },
      field(t("Trusted proxies"), trustedProxies, t("The CDN's or reverse proxy's networks, one per line or comma-separated: their X-Forwarded-For names the user's address (address limit, logs). Empty: the header is ignored")));
    const files = h("div", { class: "group" }, field(t("Certificate file"), certFile), field(t("Key file"), keyFile));
    const a = (i.security.certificate && i.security.certificate.source === "acme") ? i.security.certificate : {};
    const acmeEmail = h("input", { name: "security.certificate.email", type: "email", value: a.email || "", placeholder: "ops@example.com" });
    const acmeDirectory = h("input", { name: "security.certificate.directory", value: a.directory || "", placeholder: "Let's Encrypt" });
    const acmeRoot = h("textarea", { name: "security.certificate.directory_root_pem", rows: 3, placeholder: "-----BEGIN CERTIFICATE-----" }, a.directory_root_pem || "");
    const acme = h("div", { class: "group" },
      h("p", { class: "hint" }, t("The node asks for a certificate for the TLS server name (or the client address, or the server's), validated on port 443 of that name: listen on 443.")),
      field(t("Email for expiry notices"), acmeEmail), field(t("ACME directory"), acmeDirectory, t("Another ACME server's https:// directory; Let's Encrypt when empty")),
      field(t("ACME server's root (PEM)"), acmeRoot, t("Only for a private ACME server")));
    const ss = h("div", { class: "group" }, field(t("Method"), method));
    const hy = i.hysteria2 || { obfs: false, udp: true };
    const obfs = h("input", { type: "checkbox", name: "hysteria2.obfs", checked: Boolean(hy.obfs) });
    const obfsPassword = h("input", { name: "hysteria2.obfs_password", type: "password", autocomplete: "off", maxlength: 128,
      placeholder: editing ? t("kept when empty") : t("made by the panel when empty") });
    const mbps = (name, value) => h("input", { name, type: "number", min: 1, max: 100000, value: value || "", placeholder: t("no limit") });
    const upMbps = mbps("hysteria2.up_mbps", hy.up_mbps);
    const downMbps = mbps("hysteria2.down_mbps", hy.down_mbps);
    const hyUdp = h("input", { type: "checkbox", name: "hysteria2.udp", checked: hy.udp !== false });
    const hopPorts = h("input", { name: "hysteria2.ports", value: hy.ports || "", placeholder: "20000-20099" });
    const hopInterval = h("input", { name: "hysteria2.hop_interval_secs", type: "number", min: 5, max: 3600,
      value: hy.hop_interval_secs || "", placeholder: t("30 (the clients' default)") });
    const masquerade = h("input", { name: "hysteria2.masquerade", type: "url", value: hy.masquerade || "",
      placeholder: "https://www.example.com", maxlength: 2048 });
    const hysteria2 = h("div", { class: "group" },
      field(t("Salamander obfuscation"), obfs, t("Scrambles every packet so the wire shows no QUIC; clients get the password")),
      field(t("Obfs password"), obfsPassword, t("Never shown again")),
      field(t("Up (Mbit/s)"), upMbps, t("The most the node sends one client")),
      field(t("Down (Mbit/s)"), downMbps, t("The most the node takes from one client")),
      field("UDP", hyUdp, t("Carry users' UDP")),
      field(t("Hop ports"), hopPorts, t("More UDP ports besides the port, first-last, at most 100")),
      field(t("Hop interval (s)"), hopInterval, t("How often clients move to another of the ports, 5 to 3600; with hop ports only")),
      field(t("Masquerade site"), masquerade, t("Who does not authenticate gets this site's answers over HTTP/3; a plain 404 when empty")));
    const reality = h("div", { class: "group" },
      field(t("Target site (dest)"), dest, t("host:port of a real HTTPS site (TLS 1.3) near the server; probers see it")),
      field(t("Server names"), serverNames, t("The target's names, comma-separated; clients send the first as SNI")),
      field(t("Short ids"), shortIds, t("Hex, up to 16 digits each, comma-separated; one is made when empty")),
      field(t("Client fingerprint"), fingerprint, t("The browser whose TLS hello clients imitate")),
      field(t("Allowed clock difference (ms)"), maxTimeDiff, t("0 leaves clients' clocks unchecked")),
      i.reality_public_key ? publicKey(i.reality_public_key) : null);
    const flowBox = h("div", { class: "group" }, field(t("Flow"), flow, t("VLESS over TCP with TLS or REALITY")));
    const sniBox = h("div", { class: "group" }, field(t("TLS server name (SNI)"), sni));
    const transportBox = field(t("Transport"), transport);
    const rules = rulesSection(i.rules, tunnels, server);
    const realityOption = security.querySelector('option[value="reality"]');
    const noneOption = security.querySelector('option[value="none"]');
    const acmeOption = security.querySelector('option[value="acme"]');
    const sync = () => {
      // Hysteria 2 is QUIC under TLS: no transport, REALITY or plain.
      const quic = protocol.value === "hysteria2";
      if (quic) transport.value = "tcp";
      if (quic && ["reality", "none", "acme"].includes(security.value)) security.value = "self_signed";
      transportBox.hidden = quic;
      realityOption.hidden = quic;
      noneOption.hidden = quic;
      acmeOption.hidden = quic;
      hysteria2.hidden = !quic;
      obfsPassword.disabled = !obfs.checked;
      // WebSocket and HTTPUpgrade both have a path and a Host header.
      ws.hidden = transport.value === "tcp" || transport.value === "grpc";
      grpc.hidden = transport.value !== "grpc";
      xhttp.hidden = transport.value !== "xhttp";
      behindCdn.hidden = !["ws", "httpupgrade", "grpc", "xhttp"].includes(transport.value);
      serviceName.required = !grpc.hidden;
      path.placeholder = { httpupgrade: "/up", xhttp: "/xh" }[transport.value] || "/ws";
      files.hidden = security.value !== "files";
      acme.hidden = security.value !== "acme";
      ss.hidden = protocol.value !== "shadowsocks";
      reality.hidden = security.value !== "reality";
      sniBox.hidden = security.value === "reality";
      flowBox.hidden = !(protocol.value === "vless" && transport.value === "tcp" && security.value !== "none");
    };
    for (const c of [transport, security, protocol, obfs]) c.addEventListener("change", sync);
    sync();
    const form = h("form", {},
      field(t("Server"), server), field(t("Display name"), name, t("Shown in the panel; users see the name of the route it is in")),
      field(t("Protocol"), protocol), ss, hysteria2, field(t("Port"), port),
      transportBox, ws, grpc, xhttp, behindCdn, field(t("Security"), security), files, acme, reality, flowBox,
      field(t("Client address"), host, t("The address clients dial; the server's when empty")),
      sniBox,
      field(t("Coefficient"), coefficient, t("Weight in round-robin: 2 takes about twice the users of 1")),
      rules.box,
      h("p", { class: "form-error", role: "alert" }),
      h("div", { class: "actions" },
        h("button", { type: "button", onclick: () => close(undefined) }, t("Cancel")),
        h("button", { type: "submit", class: "primary" }, editing ? t("Save") : t("Create inbound"))));
    form.addEventListener("submit", async (e) => {
      e.preventDefault();
      showError(form, null);
      const body = {
        server_id: Number(server.value), name: name.value.trim(), protocol: protocol.value,
        port: Number(port.value),
        transport: transport.value === "tcp" ? { type: "tcp" }
          : transport.value === "grpc" ? { type: "grpc", service_name: serviceName.value.trim(), multi_mode: multiMode.checked }
          : transport.value === "xhttp" ? { type: "xhttp", path: path.value, host: wsHost.value.trim() || undefined, mode: xhttpMode.value }
          : { type: transport.value, path: path.value, host: wsHost.value.trim() || undefined },
        trusted_proxies: behindCdn.hidden ? [] : list(trustedProxies),
        rules: rules.value(),
        security: security.value === "none" ? { type: "none" }
          : security.value === "reality" ? {
            type: "reality", dest: dest.value.trim(), server_names: list(serverNames), short_ids: list(shortIds),
            max_time_diff_ms: Number(maxTimeDiff.value), fingerprint: fingerprint.value,
          }
          : { type: "tls", certificate: security.value === "files" ? { source: "files", cert: certFile.value, key: keyFile.value }
            : security.value === "acme" ? { source: "acme", email: acmeEmail.value.trim() || undefined,
              directory: acmeDirectory.value.trim() || undefined, directory_root_pem: acmeRoot.value.trim() || undefined }
            : { source: "self_signed" } },
        host: host.value.trim() || null, sni: security.value === "reality" ? null : sni.value.trim() || null,
        coefficient: Number(coefficient.value), method: protocol.value === "shadowsocks" ? method.value : null,
        flow: flowBox.hidden ? null : flow.value || null,
        hysteria2: protocol.value !== "hysteria2" ? undefined : {
          obfs: obfs.checked, obfs_password: (obfs.checked && obfsPassword.value) || undefined,
          up_mbps: upMbps.value ? Number(upMbps.value) : undefined,
          down_mbps: downMbps.value ? Number(downMbps.value) : undefined,
          udp: hyUdp.checked, ports: hopPorts.value.trim() || undefined,
          hop_interval_secs: hopInterval.value ? Number(hopInterval.value) : undefined,
          masquerade: masquerade.value.trim() || undefined,
        },
      };
      let saved;
      try {
        saved = editing ? await put(`/inbounds/${i.id}`, body) : await post("/inbounds", body);
      } catch (err) {
        showError(form, err);
        return;
      }
      // A REALITY key the operator has not seen yet: show it before closing.
      if (saved.reality_public_key && saved.reality_public_key !== i.reality_public_key) {
        form.replaceChildren(
          h("p", {}, t("Saved. Clients get this public key with their subscription; the private key stays with the panel and the node.")),
          publicKey(saved.reality_public_key),
          h("div", { class: "actions" },
            h("button", { type: "button", class: "primary", autofocus: true, onclick: () => close(saved) }, t("Done"))));
        form.querySelector("button.primary").focus();
        return;
      }
      close(saved);
    });
    return form;
  });
}

/** A REALITY inbound's public key, read-only, with a copy button. */
function publicKey(key) {
  const out = h("input", { name: "reality_public_key", readonly: true, value: key, class: "mono" });
  return h("div", { class: "copy-row" }, field(t("REALITY public key"), out, t("Clients' publicKey (pbk)")),
    h("button", { type: "button", onclick: () => copy(key, t("Public key copied")) }, t("Copy")));
}
