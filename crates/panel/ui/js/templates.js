// Operators' templates: for sing-box, Clash and Xray, the base config into which the
// panel puts its servers and groups. Each has a box (empty: the panel's own config);
// saving checks it, and a syntax error shows next to it with its line and column.

import { h, fill, field, showError, toast } from "./dom.js";
import { get, put } from "./api.js";
import { t, msg } from "./i18n.js";

const FORMATS = [
  ["sing-box", msg("sing-box (JSON)"), msg("The panel keeps outbounds (its group, its servers, direct); the rest is yours. Rules name the group Switchyard and direct.")],
  ["clash", msg("Clash / mihomo (YAML)"), msg("The panel keeps proxies and proxy-groups; the rest is yours. Without rules: MATCH to the group.")],
  ["xray", msg("Xray (JSON, one config)"), msg("The panel keeps remarks and the outbound tagged proxy (each server's); the rest is yours.")],
];

export async function templatesPage(main) {
  const cards = [];
  for (const [format, titleMsg, hintMsg] of FORMATS) {
    const title = t(titleMsg);
    const current = (await get(`/templates/${format}`)).template;
    const text = h("textarea", { name: "template", rows: 12, spellcheck: "false", class: "mono",
      placeholder: t("Empty: the panel's own config") }, current || "");
    const form = h("form", { "data-template": format },
      field(title, text, t(hintMsg)),
      h("p", { class: "form-error", role: "alert" }),
      h("div", { class: "actions" }, h("button", { type: "submit", class: "primary" }, t("Save"))));
    form.addEventListener("submit", async (e) => {
      e.preventDefault();
      showError(form, null);
      try {
        await put(`/templates/${format}`, { template: text.value.trim() ? text.value : null });
      } catch (err) {
        showError(form, err);
        return;
      }
      toast(text.value.trim()
        ? t("{title}: template saved", { title })
        : t("{title}: the panel's own config", { title }));
    });
    cards.push(h("section", { class: "card" }, form));
  }
  fill(main,
    h("div", { class: "page-head" }, h("h1", {}, t("Templates"))),
    h("p", { class: "muted" }, t("Your own base config per app family. Apps get it with the panel's servers and groups in it at their next update. What the panel would add itself (VPN, DNS, split tunnelling) is then the template's to carry.")),
    ...cards);
}
