// The "New route" wizard and the route editor: how clients see the route (name and
// flag), its balancing algorithm, and (optionally) the inbounds in its pool. Choosing
// an inbound another route holds moves it here.

import { h, field, dialog, showError } from "./dom.js";
import { post, put } from "./api.js";
import { t } from "./i18n.js";

/** Opens the wizard (no `route`) or the editor; resolves to the saved route or nothing. */
export function routeForm(clusterId, route, inbounds, routes) {
  const editing = Boolean(route);
  return dialog(editing ? t("Edit route {name}", { name: route.name }) : t("New route"), (close) => {
    const name = h("input", { name: "name", required: true, maxlength: 64, value: route ? route.name : "", placeholder: t("🇺🇸 USA"), autofocus: true });
    const flag = h("input", { name: "flag", maxlength: 16, value: route && route.flag ? route.flag : "", placeholder: t("🇺🇸 or US") });
    const algorithm = h("fieldset", { class: "field", "data-field": "algorithm" },
      h("legend", {}, t("Load-balancing algorithm")),
      radio("algorithm", "least_loaded", t("Least loaded by traffic (default): the most free bandwidth per user"),
        !route || route.algorithm === "least_loaded"),
      radio("algorithm", "round_robin", t("Round-robin: the fewest users per coefficient"),
        route && route.algorithm === "round_robin"),
      h("small", { class: "error", role: "alert" }));
    const holder = new Map();
    for (const r of routes) for (const id of r.inbound_ids) holder.set(id, r);
    const pool = h("fieldset", { class: "field pool", "data-field": "inbound_ids" },
      h("legend", {}, t("Inbounds in the pool (optional)")),
      inbounds.length ? inbounds.map((i) => {
        const other = holder.get(i.id);
        const mine = route && other && other.id === route.id;
        return h("label", { class: "check" },
          h("input", { type: "checkbox", name: "inbound", value: i.id, checked: Boolean(mine) }),
          ` ${i.name} (${i.protocol} :${i.port})`,
          other && !mine ? h("small", { class: "muted" }, ` — ${t("now in {route}: choosing it moves it here", { route: other.name })}`) : null);
      }) : h("small", { class: "muted" }, t("No inbound yet. An empty route is a placeholder: fill it later by dragging an inbound in.")),
      h("small", { class: "error", role: "alert" }));
    const form = h("form", { class: "wizard" },
      h("section", {}, h("h3", {}, t("1. How clients see this route")),
        field(t("Name"), name, t("What users see in their app")), field(t("Flag"), flag, t("An emoji or a country code, shown before the name in apps"))),
      h("section", {}, h("h3", {}, t("2. Load balancing")), algorithm),
      h("section", {}, h("h3", {}, t("3. Inbounds")), pool),
      h("p", { class: "form-error", role: "alert" }),
      h("div", { class: "actions" },
        h("button", { type: "button", onclick: () => close(undefined) }, t("Cancel")),
        h("button", { type: "submit", class: "primary" }, editing ? t("Save") : t("Create route"))));
    form.addEventListener("submit", async (e) => {
      e.preventDefault();
      showError(form, null);
      const body = {
        name: name.value.trim(),
        flag: flag.value.trim() || null,
        algorithm: form.querySelector("input[name=algorithm]:checked").value,
        inbound_ids: [...form.querySelectorAll("input[name=inbound]:checked")].map((c) => Number(c.value)),
      };
      try {
        close(editing ? await put(`/routes/${route.id}`, body) : await post(`/clusters/${clusterId}/routes`, body));
      } catch (err) {
        showError(form, err);
      }
    });
    return form;
  });
}

function radio(name, value, label, checked) {
  return h("label", { class: "check" }, h("input", { type: "radio", name, value, checked: Boolean(checked) }), ` ${label}`);
}
