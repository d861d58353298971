// One change to many users: the selected ones, or every user the page's filter
// names. The dialog first asks the panel how many it would change (a preview), then
// applies it in one go.

import { h, field, dialog, showError, toast } from "./dom.js";
import { get, post } from "./api.js";
import { t, msg } from "./i18n.js";

const GIB = 1024 ** 3;
const ACTIONS = [
  ["extend_expiry", msg("Extend expiry by days")],
  ["add_traffic", msg("Add traffic (GiB) to each limit")],
  ["reset_usage", msg("Reset usage")],
  ["enable", msg("Enable")],
  ["disable", msg("Disable")],
  ["set_clusters", msg("Put in clusters")],
  ["delete", msg("Delete")],
];

/** Opens the dialog for `ids` (when any are selected) or `filter`; true once applied. */
export async function bulkDialog(ids, filter) {
  const clusters = await get("/clusters");
  return dialog(t("Change many users"), (close) => {
    const action = h("select", { name: "action" }, ACTIONS.map(([v, label]) => h("option", { value: v }, t(label))));
    const days = h("input", { name: "days", type: "number", min: 1, max: 36500, value: 30 });
    const gib = h("input", { name: "bytes", type: "number", min: 0.1, step: "0.1", value: 10 });
    const boxes = clusters.map((c) => h("label", { class: "check" },
      h("input", { type: "checkbox", name: "bulk_clusters", value: c.id }), ` ${c.name}`));
    const daysField = field(t("Days"), days);
    const gibField = field(t("GiB"), gib);
    const clustersField = h("div", { class: "field", "data-field": "action.clusters" }, h("span", {}, t("Clusters")), ...boxes,
      h("small", { class: "hint" }, t("None ticked: every cluster")), h("small", { class: "error", role: "alert" }));
    const said = h("p", { "data-bulk-count": "", role: "status" });
    const go = h("button", { type: "submit", class: "primary", "data-bulk-go": "" }, t("Count them"));
    let counted = null;
    const shown = () => {
      daysField.hidden = action.value !== "extend_expiry";
      gibField.hidden = action.value !== "add_traffic";
      clustersField.hidden = action.value !== "set_clusters";
      counted = null;
      said.textContent = "";
      go.textContent = t("Count them");
    };
    action.addEventListener("change", shown);
    for (const el of [days, gib, ...boxes.map((b) => b.querySelector("input"))]) el.addEventListener("change", shown);
    shown();
    const form = h("form", {},
      h("p", {}, ids.length ? t("To the {n} selected users.", { n: ids.length }) : t("To every user the filter names.")),
      field(t("Change"), action), daysField, gibField, clustersField, said,
      h("p", { class: "form-error", role: "alert" }),
      h("div", { class: "actions" },
        h("button", { type: "button", onclick: () => close(false) }, t("Cancel")), go));
    function body(preview) {
      const a = { type: action.value };
      if (action.value === "extend_expiry") a.days = Number(days.value);
      if (action.value === "add_traffic") a.bytes = Math.round(Number(gib.value) * GIB);
      if (action.value === "set_clusters") {
        const ticked = boxes.map((b) => b.querySelector("input")).filter((i) => i.checked).map((i) => Number(i.value));
        a.clusters = ticked.length ? ticked : null;
      }
      return ids.length ? { ids, action: a, preview } : { filter, action: a, preview };
    }
    form.addEventListener("submit", async (e) => {
      e.preventDefault();
      showError(form, null);
      try {
        if (counted === null) {
          const r = await post("/users/bulk", body(true));
          counted = r.count;
          said.textContent = t("This changes {n} users.", { n: r.count });
          go.textContent = t("Apply to {n} users", { n: r.count });
          return;
        }
        const r = await post("/users/bulk", body(false));
        toast(t("Done: {name}", { name: r.name }));
        close(true);
      } catch (err) { showError(form, err); }
    });
    return form;
  });
}
