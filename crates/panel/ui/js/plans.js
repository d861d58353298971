// Plans: the defaults new users are made from (limit and reset, days until expiry or
// a hold, device and address limits, clusters). The user form offers them.

import { h, fill, field, dialog, showError, confirmAction, toast } from "./dom.js";
import { get, post, put, del } from "./api.js";
import { bytes, num } from "./format.js";
import { t, msg } from "./i18n.js";

const GIB = 1024 ** 3;
const RESETS = [["none", msg("Never")], ["day", msg("Every day")], ["week", msg("Every week")], ["month", msg("Every month (1st)")],
  ["month_from_start", msg("Every month (from the day created)")], ["year", msg("Every year")]];

export async function plansPage(main) {
  const list = h("div", {});
  fill(main,
    h("div", { class: "page-head" }, h("h1", {}, t("Plans")),
      h("div", { class: "actions" },
        h("button", { type: "button", class: "primary", "data-new-plan": "", onclick: () => edit(null) }, t("New plan")))),
    h("p", { class: "muted" }, t("Defaults a new user is made from. Changing a plan does not change the users made from it.")),
    list);
  async function load() {
    const plans = await get("/plans");
    fill(list, plans.length ? h("div", { class: "table-wrap" }, h("table", { class: "plans" },
      h("thead", {}, h("tr", {}, [t("Plan"), t("Traffic"), t("Expiry"), t("Devices"), ""].map((label) => h("th", { scope: "col" }, label)))),
      h("tbody", {}, plans.map((p) => h("tr", { "data-plan": p.name },
        h("th", { scope: "row" }, p.name),
        h("td", {}, p.traffic_limit ? bytes(p.traffic_limit) : t("unlimited")),
        h("td", {}, p.expiry_days
          ? (p.on_hold ? t("{n} days from the first connection", { n: p.expiry_days }) : t("{n} days", { n: p.expiry_days }))
          : t("never")),
        h("td", {}, p.device_limit ? num(p.device_limit) : t("no limit")),
        h("td", { class: "row-actions" },
          h("button", { type: "button", onclick: () => edit(p) }, t("Edit")),
          h("button", { type: "button", class: "danger-text", onclick: () => remove(p) }, t("Delete"))))))))
      : h("p", { class: "muted" }, t("No plan yet.")));
  }
  async function edit(p) {
    if (await planForm(p)) await load();
  }
  async function remove(p) {
    const ok = await confirmAction(t("Delete plan {name}?", { name: p.name }), t("Users made from it stay as they are."), t("Delete plan"));
    if (!ok) return;
    try { await del(`/plans/${p.id}`); toast(t("Plan {name} deleted", { name: p.name })); } catch (err) { toast(err.message, "bad"); }
    await load();
  }
  await load();
}

async function planForm(p) {
  const clusters = await get("/clusters");
  const editing = Boolean(p);
  return dialog(editing ? t("Edit plan {name}", { name: p.name }) : t("New plan"), (close) => {
    const name = h("input", { name: "name", required: true, maxlength: 64, value: p ? p.name : "", autofocus: true });
    const limit = h("input", { name: "traffic_limit", type: "number", min: 0, step: "0.1", value: p && p.traffic_limit ? +(p.traffic_limit / GIB).toFixed(2) : "", placeholder: t("unlimited") });
    const reset = h("select", { name: "reset_strategy" },
      RESETS.map(([v, label]) => h("option", { value: v, selected: (p ? p.reset_strategy : "none") === v }, t(label))));
    const days = h("input", { name: "expiry_days", type: "number", min: 1, max: 36500, value: p && p.expiry_days ? p.expiry_days : "", placeholder: t("never") });
    const hold = h("input", { type: "checkbox", name: "on_hold", checked: Boolean(p && p.on_hold) });
    const devices = h("input", { name: "device_limit", type: "number", min: 1, max: 1000, value: p && p.device_limit ? p.device_limit : "", placeholder: t("no limit") });
    const addresses = h("input", { name: "address_limit", type: "number", min: 1, max: 1000, value: p && p.address_limit ? p.address_limit : "", placeholder: t("no limit") });
    const boxes = clusters.map((c) => h("input", { type: "checkbox", name: "plan_clusters", value: c.id, checked: Boolean(p && p.clusters && p.clusters.includes(c.id)) }));
    const form = h("form", {},
      field(t("Name"), name),
      field(t("Traffic limit (GiB)"), limit, t("Empty: unlimited")),
      field(t("Usage resets"), reset),
      field(t("Expires after (days)"), days, t("Empty: never")),
      h("div", { class: "field", "data-field": "on_hold" }, h("label", { class: "check" }, hold, " ", t("Count the days from the first connection")),
        h("small", { class: "error", role: "alert" })),
      field(t("Devices"), devices, t("Empty: no limit")),
      field(t("Addresses at once"), addresses, t("Empty: no limit")),
      h("div", { class: "field", "data-field": "clusters" }, h("span", {}, t("Clusters")),
        ...boxes.map((b, i) => h("label", { class: "check" }, b, ` ${clusters[i].name}`)),
        h("small", { class: "hint" }, t("None ticked: every cluster")), h("small", { class: "error", role: "alert" })),
      h("p", { class: "form-error", role: "alert" }),
      h("div", { class: "actions" },
        h("button", { type: "button", onclick: () => close(undefined) }, t("Cancel")),
        h("button", { type: "submit", class: "primary" }, editing ? t("Save") : t("Create plan"))));
    form.addEventListener("submit", async (e) => {
      e.preventDefault();
      showError(form, null);
      const ticked = boxes.filter((b) => b.checked).map((b) => Number(b.value));
      const body = {
        name: name.value.trim(),
        traffic_limit: limit.value === "" ? null : Math.round(Number(limit.value) * GIB),
        reset_strategy: reset.value,
        expiry_days: days.value ? Number(days.value) : null,
        on_hold: hold.checked,
        device_limit: devices.value ? Number(devices.value) : null,
        address_limit: addresses.value ? Number(addresses.value) : null,
        clusters: ticked.length ? ticked : null,
      };
      try {
        close(editing ? await put(`/plans/${p.id}`, body) : await post("/plans", body));
      } catch (err) { showError(form, err); }
    });
    return form;
  });
}
