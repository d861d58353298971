// The owner's webhooks: each URL with its events; a new hook's secret shown once;
// a test event; the deliveries with their last attempt, each replayable.

import { h, fill, field, dialog, showError, confirmAction, copy, toast } from "./dom.js";
import { get, post, put, del } from "./api.js";
import { num, when } from "./format.js";
import { t, msg } from "./i18n.js";

/** Every event a hook may pick (the panel's list: `model::webhook::EVENTS`), with what it tells. */
const EVENTS = [
  ["user.created", msg("a user is made")],
  ["user.changed", msg("a user is changed")],
  ["user.deleted", msg("a user is deleted")],
  ["users.bulk", msg("a bulk change is applied")],
  ["user.limited", msg("a user has used all of their traffic")],
  ["user.expired", msg("a user's expiry has passed")],
  ["user.usage_high", msg("a user passed the usage threshold")],
  ["user.expiring", msg("a user expires soon")],
  ["user.hold_started", msg("an on-hold user connected for the first time")],
  ["server.online", msg("a server is online")],
  ["server.unavailable", msg("a server is unavailable")],
  ["tunnel.changed", msg("a tunnel's state changed")],
  ["node.upgraded", msg("a node was upgraded")],
  ["webhook.test", msg("a test, sent on demand")],
];
/** A delivery's state (the API's name) as it is shown. */
const STATES = { pending: msg("pending"), delivered: msg("delivered"), failed: msg("failed") };

export async function webhooksPage(main) {
  const list = h("div", {});
  const shown = h("div", { "data-deliveries": "" });
  fill(main,
    h("div", { class: "page-head" }, h("h1", {}, t("Webhooks")),
      h("div", { class: "actions" },
        h("button", { type: "button", class: "primary", "data-new-webhook": "", onclick: () => edit(null) }, t("New webhook")))),
    h("p", { class: "muted" }, t("Events POSTed to your URLs, signed with each hook's secret, retried until they get through (docs: panel.md, Webhooks).")),
    list, shown);
  async function load() {
    const hooks = await get("/webhooks");
    fill(list, hooks.length ? h("div", { class: "table-wrap" }, h("table", { class: "webhooks" },
      h("thead", {}, h("tr", {}, [t("URL"), t("Events"), t("On"), ""].map((label) => h("th", { scope: "col" }, label)))),
      h("tbody", {}, hooks.map((w) => h("tr", { "data-webhook": w.id },
        h("th", { scope: "row" }, h("code", {}, w.url)),
        h("td", {}, w.events.join(", ")),
        h("td", {}, w.enabled ? t("yes") : t("no")),
        h("td", { class: "row-actions" },
          h("button", { type: "button", onclick: () => deliveries(w) }, t("Deliveries")),
          h("button", { type: "button", "data-test-webhook": w.id, onclick: () => test(w) }, t("Send test")),
          h("button", { type: "button", onclick: () => edit(w) }, t("Edit")),
          h("button", { type: "button", class: "danger-text", onclick: () => remove(w) }, t("Delete"))))))))
      : h("p", { class: "muted" }, t("No webhook yet.")));
  }
  async function deliveries(w) {
    const ds = await get(`/webhooks/${w.id}/deliveries`);
    fill(shown, h("section", { class: "card", "aria-label": t("Deliveries") },
      h("h2", {}, t("Deliveries to {url}", { url: w.url })),
      ds.length ? h("div", { class: "table-wrap" }, h("table", {},
        h("thead", {}, h("tr", {}, [t("When"), t("Event"), t("State"), t("Attempts"), t("Last"), ""].map((label) => h("th", { scope: "col" }, label)))),
        h("tbody", {}, ds.map((d) => h("tr", { "data-delivery": d.id },
          h("td", {}, when(d.created_ms)),
          h("td", {}, d.event),
          h("td", { "data-state": d.state }, STATES[d.state] ? t(STATES[d.state]) : d.state),
          h("td", {}, num(d.attempts)),
          h("td", {}, d.last_error || (d.last_status ? String(d.last_status) : "—")),
          h("td", { class: "row-actions" }, h("button", { type: "button", onclick: async () => {
            try { await post(`/webhooks/${w.id}/deliveries/${d.id}/replay`); toast(t("Sent again")); } catch (err) { toast(err.message, "bad"); }
            await deliveries(w);
          } }, t("Replay"))))))))
        : h("p", { class: "muted" }, t("Nothing sent yet."))));
  }
  async function test(w) {
    try { await post(`/webhooks/${w.id}/test`); toast(t("A test event is on its way")); } catch (err) { toast(err.message, "bad"); }
  }
  async function edit(w) {
    if (await webhookForm(w)) await load();
  }
  async function remove(w) {
    const ok = await confirmAction(t("Delete the webhook to {url}?", { url: w.url }), t("Its deliveries, sent or not, go with it."), t("Delete webhook"));
    if (!ok) return;
    try { await del(`/webhooks/${w.id}`); toast(t("Webhook deleted")); } catch (err) { toast(err.message, "bad"); }
    fill(shown);
    await load();
  }
  await load();
}

function webhookForm(w) {
  const editing = Boolean(w);
  return dialog(editing ? t("Edit webhook") : t("New webhook"), (close) => {
    const url = h("input", { name: "url", type: "url", required: true, maxlength: 2000, value: w ? w.url : "", autofocus: true, placeholder: "https://billing.example/switchyard" });
    const boxes = EVENTS.map(([e]) => h("input", { type: "checkbox", name: "events", value: e, checked: w ? w.events.includes(e) : e !== "webhook.test" }));
    const enabled = h("input", { type: "checkbox", name: "enabled", checked: w ? w.enabled : true });
    const priv = h("input", { type: "checkbox", name: "allow_private", checked: Boolean(w && w.allow_private) });
    const body = h("div", {});
    const form = h("form", {},
      field(t("URL"), url),
      h("div", { class: "field", "data-field": "events" }, h("span", {}, t("Events")),
        ...boxes.map((b, i) => h("label", { class: "check" }, b, " ", h("code", {}, b.value), " ", h("span", { class: "muted" }, t(EVENTS[i][1])))),
        h("small", { class: "error", role: "alert" })),
      h("label", { class: "check" }, enabled, " ", t("Delivering")),
      h("label", { class: "check" }, priv, " ", t("May deliver to a private or loopback address")),
      h("p", { class: "form-error", role: "alert" }),
      h("div", { class: "actions" },
        h("button", { type: "button", onclick: () => close(undefined) }, t("Cancel")),
        h("button", { type: "submit", class: "primary" }, editing ? t("Save") : t("Create webhook"))));
    form.addEventListener("submit", async (e) => {
      e.preventDefault();
      showError(form, null);
      const input = { url: url.value.trim(), events: boxes.filter((b) => b.checked).map((b) => b.value), enabled: enabled.checked, allow_private: priv.checked };
      try {
        if (editing) { close(await put(`/webhooks/${w.id}`, input)); return; }
        const made = await post("/webhooks", input);
        fill(body, h("div", {},
          h("p", {}, t("The hook's secret, shown this once: keep it where your receiver checks signatures.")),
          h("div", { class: "copy-row" }, h("code", { "data-webhook-secret": "" }, made.secret),
            h("button", { type: "button", onclick: () => copy(made.secret, t("Secret copied")) }, t("Copy"))),
          h("div", { class: "actions" }, h("button", { type: "button", class: "primary", onclick: () => close(made) }, t("Done")))));
      } catch (err) { showError(form, err); }
    });
    body.append(form);
    return body;
  });
}
