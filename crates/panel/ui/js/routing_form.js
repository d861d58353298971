// A cluster's or a user's own routing (split tunnelling in users' apps): whether it
// has its own (else it inherits: a user the cluster's, a cluster the panel's
// default), the preset, ad blocking, and custom rules, one per line:
// `ACTION KIND VALUE`, ACTION `direct`, `proxy` or `block`, KIND `domain`, `suffix`,
// `keyword`, `cidr` or `country` (`direct suffix bank.example`).

import { h, field, dialog, showError } from "./dom.js";
import { get, put, ApiError } from "./api.js";
import { t } from "./i18n.js";

const KINDS = { domain: "domain", suffix: "domain_suffix", keyword: "domain_keyword", cidr: "ip_cidr", country: "country" };

/** The custom rules as lines, one destination each. */
function toLines(custom) {
  const out = [];
  for (const r of custom || []) {
    for (const [kind, key] of Object.entries(KINDS)) {
      for (const v of r[key] || []) out.push(`${r.action || "proxy"} ${kind} ${v}`);
    }
  }
  return out.join("\n");
}

/** Lines back to rules (one per line, in order); throws naming the bad line. */
function fromLines(text) {
  const rules = [];
  text.split("\n").map((l) => l.trim()).forEach((line, i) => {
    if (!line || line.startsWith("#")) return;
    const [action, kind, value, ...rest] = line.split(/\s+/);
    if (!["direct", "proxy", "block"].includes(action) || !KINDS[kind] || !value || rest.length) {
      throw new ApiError(422, t("line {n}: \"{line}\" is not ACTION KIND VALUE (direct|proxy|block, domain|suffix|keyword|cidr|country)",
        { n: i + 1, line }), "routing.custom");
    }
    rules.push({ action, [KINDS[kind]]: [value] });
  });
  return rules;
}

/** Edits the routing at `path` (`/clusters/1/routing`); resolves to true when saved. */
export async function routingForm(title, path, inherits) {
  const current = (await get(path)).routing;
  return dialog(title, (close) => {
    const r = current || { preset: "global", block_ads: false, custom: [] };
    const own = h("input", { type: "checkbox", name: "own", checked: Boolean(current) });
    const preset = h("select", { name: "routing.preset" },
      [["global", t("Everything through the VPN")], ["russia", t("Russia direct, blocked services through the VPN")],
        ["iran", t("Iran direct, blocked services through the VPN")], ["china", t("China direct, blocked services through the VPN")]]
        .map(([v, label]) => h("option", { value: v, selected: r.preset === v }, label)));
    const ads = h("input", { type: "checkbox", name: "routing.block_ads", checked: Boolean(r.block_ads) });
    const custom = h("textarea", { name: "routing.custom", rows: 5, spellcheck: "false",
      placeholder: "direct suffix bank.example\nblock keyword tracker\nproxy cidr 10.8.0.0/16" }, toLines(r.custom));
    const settings = h("div", { class: "group" },
      field(t("Preset"), preset, t("Where what no custom rule matches goes")),
      field(t("Block ads and trackers"), ads),
      field(t("Custom rules"), custom, t("One per line, tried first: ACTION KIND VALUE; ACTION direct, proxy or block; KIND domain, suffix, keyword, cidr or country (ru, ir, cn)")));
    const sync = () => { settings.hidden = !own.checked; };
    own.addEventListener("change", sync);
    sync();
    const form = h("form", {},
      field(t("Own routing"), own, t("Off: {inherits}", { inherits })), settings,
      h("p", { class: "form-error", role: "alert" }),
      h("div", { class: "actions" },
        h("button", { type: "button", onclick: () => close(undefined) }, t("Cancel")),
        h("button", { type: "submit", class: "primary" }, t("Save"))));
    form.addEventListener("submit", async (e) => {
      e.preventDefault();
      showError(form, null);
      try {
        const routing = own.checked
          ? { preset: preset.value, block_ads: ads.checked, custom: fromLines(custom.value) }
          : null;
        await put(path, { routing });
      } catch (err) {
        showError(form, err);
        return;
      }
      close(true);
    });
    return form;
  });
}
