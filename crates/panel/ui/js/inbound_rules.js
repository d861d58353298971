// An inbound's rules in its form: block BitTorrent, blocked destinations, direct
// destinations, and for each tunnel the inbound's server relays, the destinations
// carried into it. A destination is a domain (with its subdomains) or an IP network.

import { h, field } from "./dom.js";
import { t } from "./i18n.js";

const list = (input) => input.value.split(/[\s,]+/).filter(Boolean);

/**
 * The rules section for `rules` (an inbound's, or none), offering the `tunnels` whose
 * relay is the server `server` (a select) names. `box` goes in the form, `sync()`
 * follows a change of server, `value()` is the API's `rules`.
 */
export function rulesSection(rules, tunnels, server) {
  const r = rules || {};
  const area = (name, values, placeholder) => h("textarea", { name, rows: 3, spellcheck: "false", placeholder },
    (values || []).join("\n"));
  const torrents = h("input", { type: "checkbox", name: "rules.block_bittorrent", checked: Boolean(r.block_bittorrent) });
  const block = area("rules.block", r.block, "ads.example\n203.0.113.0/24");
  const direct = area("rules.direct", r.direct, "bank.example");
  const into = (tunnels || []).map((tunnel) => {
    const mine = (r.tunnel || []).find((x) => x.tunnel_id === tunnel.id);
    const input = area(`rules.tunnel.${tunnel.id}`, mine && mine.destinations, "video.example\n10.20.0.0/16");
    return { t: tunnel, input, box: field(t("Into tunnel {name}", { name: tunnel.name }), input, t("Destinations carried into this tunnel")) };
  });
  const box = h("fieldset", { class: "group" }, h("legend", {}, t("Rules")),
    field(t("Block BitTorrent"), torrents, t("Peers, trackers, DHT and uTP are refused, told from their first bytes")),
    field(t("Blocked destinations"), block, t("Domains (each with its subdomains) and IP networks, one per line")),
    field(t("Direct destinations"), direct, t("Leave from this server itself, never through a tunnel")),
    ...into.map((x) => x.box));
  const sync = () => {
    for (const x of into) x.box.hidden = x.t.relay_server_id !== Number(server.value);
  };
  server.addEventListener("change", sync);
  sync();
  const value = () => ({
    block_bittorrent: torrents.checked, block: list(block), direct: list(direct),
    tunnel: into.filter((x) => !x.box.hidden && list(x.input).length)
      .map((x) => ({ tunnel_id: x.t.id, destinations: list(x.input) })),
  });
  return { box, value };
}
