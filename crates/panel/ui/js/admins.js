// The owner's page of admins: each with a role and, for a reseller, a quota and
// what it is used by; add, change, set a password, delete.

import { h, fill, field, dialog, showError, confirmAction, toast } from "./dom.js";
import { get, post, put, del } from "./api.js";
import { bytes, num } from "./format.js";
import { t, msg } from "./i18n.js";

const GIB = 1024 ** 3;
const ROLES = [
  ["owner", msg("Owner: everything")],
  ["admin", msg("Admin: everything but admins and imports")],
  ["reseller", msg("Reseller: their own users, within a quota")],
  ["read_only", msg("Read-only: reads, never writes")],
];
/** A role's short name, as the list shows it. */
const ROLE_NAMES = { owner: msg("Owner"), admin: msg("Admin"), reseller: msg("Reseller"), read_only: msg("Read-only") };

export async function adminsPage(main, me) {
  const list = h("div", {});
  fill(main,
    h("div", { class: "page-head" }, h("h1", {}, t("Admins")),
      h("div", { class: "actions" },
        h("button", { type: "button", class: "primary", "data-new-admin": "", onclick: () => edit(null) }, t("New admin")))),
    h("p", { class: "muted" }, t("Who may log in, and what each may do. A reseller sees and changes only the users they made, within their quota.")),
    list);
  async function load() {
    const admins = await get("/admins");
    fill(list, h("div", { class: "table-wrap" }, h("table", { class: "admins" },
      h("thead", {}, h("tr", {}, [t("Admin"), t("Role"), t("Users"), t("Traffic handed out"), t("Longest expiry"), ""].map((label) => h("th", { scope: "col" }, label)))),
      h("tbody", {}, admins.map((a) => h("tr", { "data-admin": a.username },
        h("th", { scope: "row" }, a.username, me && a.id === me.id ? h("span", { class: "badge" }, " ", t("You")) : null),
        h("td", { "data-role": a.role }, ROLE_NAMES[a.role] ? t(ROLE_NAMES[a.role]) : a.role),
        h("td", {}, bound(a.used.users, a.quota.max_users, num)),
        h("td", {}, bound(a.used.traffic, a.quota.max_traffic, bytes)),
        h("td", {}, a.quota.max_expiry_days ? t("{n} days", { n: a.quota.max_expiry_days }) : "—"),
        h("td", { class: "row-actions" },
          h("button", { type: "button", onclick: () => edit(a) }, t("Edit")),
          h("button", { type: "button", onclick: () => password(a) }, t("Password…")),
          h("button", { type: "button", class: "danger-text", onclick: () => remove(a) }, t("Delete")))))))));
  }
  async function edit(a) {
    if (await adminForm(a)) await load();
  }
  async function password(a) {
    await dialog(t("Password of {name}", { name: a.username }), (close) => {
      const pass = h("input", { name: "password", type: "password", autocomplete: "new-password", required: true, minlength: 12, maxlength: 256, autofocus: true });
      const form = h("form", {},
        field(t("New password"), pass, t("12 to 256 characters; their sessions end, their API tokens stay")),
        h("p", { class: "form-error", role: "alert" }),
        h("div", { class: "actions" },
          h("button", { type: "button", onclick: () => close(false) }, t("Cancel")),
          h("button", { type: "submit", class: "primary" }, t("Set password"))));
      form.addEventListener("submit", async (e) => {
        e.preventDefault();
        showError(form, null);
        try {
          await put(`/admins/${a.id}/password`, { password: pass.value });
          toast(t("{name}'s password is set", { name: a.username }));
          close(true);
        } catch (err) { showError(form, err); }
      });
      return form;
    });
  }
  async function remove(a) {
    const ok = await confirmAction(t("Delete admin {name}?", { name: a.username }),
      t("They are logged out and their API tokens stop working. Their users stay, owned by nobody in particular."), t("Delete admin"));
    if (!ok) return;
    try { await del(`/admins/${a.id}`); toast(t("Admin {name} deleted", { name: a.username })); } catch (err) { toast(err.message, "bad"); }
    await load();
  }
  await load();
}

/** `used` of `max` (shown by `show`), or `used` alone without a bound. */
function bound(used, max, show) {
  return max === null || max === undefined ? show(used) : t("{used} of {limit}", { used: show(used), limit: show(max) });
}

async function adminForm(a) {
  const clusters = await get("/clusters");
  const editing = Boolean(a);
  const q = (a && a.quota) || {};
  return dialog(editing ? t("Edit admin {name}", { name: a.username }) : t("New admin"), (close) => {
    const username = h("input", { name: "username", required: true, maxlength: 64, value: a ? a.username : "", autofocus: true });
    const pass = h("input", { name: "password", type: "password", autocomplete: "new-password", required: true, minlength: 12, maxlength: 256 });
    const role = h("select", { name: "role" },
      ROLES.map(([v, label]) => h("option", { value: v, selected: (a ? a.role : "reseller") === v }, t(label))));
    const users = h("input", { name: "quota.max_users", type: "number", min: 0, value: q.max_users ?? "", placeholder: t("no bound") });
    const traffic = h("input", { name: "quota.max_traffic", type: "number", min: 0, step: "0.1", value: q.max_traffic != null ? +(q.max_traffic / GIB).toFixed(2) : "", placeholder: t("no bound") });
    const days = h("input", { name: "quota.max_expiry_days", type: "number", min: 1, max: 36500, value: q.max_expiry_days ?? "", placeholder: t("no bound") });
    const boxes = clusters.map((c) => h("label", { class: "check" },
      h("input", { type: "checkbox", name: "quota.clusters", value: c.id, checked: (q.clusters || []).includes(c.id) }), ` ${c.name}`));
    const quota = h("fieldset", { class: "quota", "data-quota": "" },
      h("legend", {}, t("Quota")),
      field(t("Users"), users, t("At most this many users of theirs")),
      field(t("Traffic to hand out (GiB)"), traffic, t("Their users' traffic limits add up to at most this; each user then needs a limit")),
      field(t("Longest expiry (days)"), days, t("Each of their users expires (or is on hold) at most this many days ahead")),
      h("div", { class: "field", "data-field": "quota.clusters" }, h("span", {}, t("Clusters")), ...boxes,
        h("small", { class: "hint" }, t("None ticked: every cluster")), h("small", { class: "error", role: "alert" })));
    const showQuota = () => { quota.hidden = role.value !== "reseller"; };
    role.addEventListener("change", showQuota);
    showQuota();
    const form = h("form", {},
      field(t("User name"), username),
      editing ? null : field(t("Password"), pass, t("12 to 256 characters")),
      field(t("Role"), role),
      quota,
      h("p", { class: "form-error", role: "alert" }),
      h("div", { class: "actions" },
        h("button", { type: "button", onclick: () => close(undefined) }, t("Cancel")),
        h("button", { type: "submit", class: "primary" }, editing ? t("Save") : t("Add admin"))));
    form.addEventListener("submit", async (e) => {
      e.preventDefault();
      showError(form, null);
      const ticked = boxes.map((b) => b.querySelector("input")).filter((i) => i.checked).map((i) => Number(i.value));
      const body = {
        username: username.value.trim(),
        role: role.value,
        quota: role.value !== "reseller" ? {} : {
          max_users: users.value === "" ? null : Number(users.value),
          max_traffic: traffic.value === "" ? null : Math.round(Number(traffic.value) * GIB),
          max_expiry_days: days.value === "" ? null : Number(days.value),
          clusters: ticked.length ? ticked : null,
        },
      };
      try {
        if (editing) close(await put(`/admins/${a.id}`, body));
        else close(await post("/admins", { ...body, password: pass.value }));
      } catch (err) { showError(form, err); }
    });
    return form;
  });
}

