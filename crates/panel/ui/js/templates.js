// Operators' templates: for sing-box, Clash and Xray, the base config into which the
// panel puts its servers and groups. Each has a box (empty: the panel's own config);
// saving checks it, and a syntax error shows next to it with its line and column.

import { h, fill, field, showError, toast } from "./dom.js";
import { get, put } from "./api.js";

const FORMATS = [
  ["sing-box", "sing-box (JSON)", "The panel keeps outbounds (its group, its servers, direct); the rest is yours. Rules name the group Switchyard and direct."],
  ["clash", "Clash / mihomo (YAML)", "The panel keeps proxies and proxy-groups; the rest is yours. Without rules: MATCH to the group."],
  ["xray", "Xray (JSON, one config)", "The panel keeps remarks and the outbound tagged proxy (each server's); the rest is yours."],
];

export async function templatesPage(main) {
  const cards = [];
  for (const [format, title, hint] of FORMATS) {
    const current = (await get(`/templates/${format}`)).template;
    const text = h("textarea", { name: "template", rows: 12, spellcheck: "false", class: "mono",
      placeholder: "Empty: the panel's own config" }, current || "");
    const form = h("form", { "data-template": format },
      field(title, text, hint),
      h("p", { class: "form-error", role: "alert" }),
      h("div", { class: "actions" }, h("button", { type: "submit", class: "primary" }, "Save")));
    form.addEventListener("submit", async (e) => {
      e.preventDefault();
      showError(form, null);
      try {
        await put(`/templates/${format}`, { template: text.value.trim() ? text.value : null });
      } catch (err) {
        showError(form, err);
        return;
      }
      toast(text.value.trim() ? `${title}: template saved` : `${title}: the panel's own config`);
    });
    cards.push(h("section", { class: "card" }, form));
  }
  fill(main,
    h("div", { class: "page-head" }, h("h1", {}, "Templates")),
    h("p", { class: "muted" }, "Your own base config per app family. Apps get it with the panel's servers and groups in it at their next update. What the panel would add itself (VPN, DNS, split tunnelling) is then the template's to carry."),
    ...cards);
}
