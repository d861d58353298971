// The owner's page of admins: each with a role and, for a reseller, a quota and
// what it is used by; add, change, set a password, delete.

import { h, fill, field, dialog, showError, confirmAction, toast } from "./dom.js";
import { get, post, put, del } from "./api.js";
import { bytes } from "./format.js";

const GIB = 1024 ** 3;
const ROLES = [
  ["owner", "Owner: everything"],
  ["admin", "Admin: everything but admins and imports"],
  ["reseller", "Reseller: their own users, within a quota"],
  ["read_only", "Read-only: reads, never writes"],
];

export async function adminsPage(main, me) {
  const list = h("div", {});
  fill(main,
    h("div", { class: "page-head" }, h("h1", {}, "Admins"),
      h("div", { class: "actions" },
        h("button", { type: "button", class: "primary", "data-new-admin": "", onclick: () => edit(null) }, "New admin"))),
    h("p", { class: "muted" }, "Who may log in, and what each may do. A reseller sees and changes only the users they made, within their quota."),
    list);
  async function load() {
    const admins = await get("/admins");
    fill(list, h("div", { class: "table-wrap" }, h("table", { class: "admins" },
      h("thead", {}, h("tr", {}, ["Admin", "Role", "Users", "Traffic handed out", "Longest expiry", ""].map((t) => h("th", { scope: "col" }, t)))),
      h("tbody", {}, admins.map((a) => h("tr", { "data-admin": a.username },
        h("th", { scope: "row" }, a.username, me && a.id === me.id ? h("span", { class: "badge" }, " You") : null),
        h("td", { "data-role": a.role }, (ROLES.find(([r]) => r === a.role) || [a.role, a.role])[1].split(":")[0]),
        h("td", {}, bound(a.used.users, a.quota.max_users, String)),
        h("td", {}, bound(a.used.traffic, a.quota.max_traffic, bytes)),
        h("td", {}, a.quota.max_expiry_days ? `${a.quota.max_expiry_days} days` : "—"),
        h("td", { class: "row-actions" },
          h("button", { type: "button", onclick: () => edit(a) }, "Edit"),
          h("button", { type: "button", onclick: () => password(a) }, "Password…"),
          h("button", { type: "button", class: "danger-text", onclick: () => remove(a) }, "Delete"))))))));
  }
  async function edit(a) {
    if (await adminForm(a)) await load();
  }
  async function password(a) {
    await dialog(`Password of ${a.username}`, (close) => {
      const pass = h("input", { name: "password", type: "password", autocomplete: "new-password", required: true, minlength: 12, maxlength: 256, autofocus: true });
      const form = h("form", {},
        field("New password", pass, "12 to 256 characters; their sessions end, their API tokens stay"),
        h("p", { class: "form-error", role: "alert" }),
        h("div", { class: "actions" },
          h("button", { type: "button", onclick: () => close(false) }, "Cancel"),
          h("button", { type: "submit", class: "primary" }, "Set password")));
      form.addEventListener("submit", async (e) => {
        e.preventDefault();
        showError(form, null);
        try {
          await put(`/admins/${a.id}/password`, { password: pass.value });
          toast(`${a.username}'s password is set`);
          close(true);
        } catch (err) { showError(form, err); }
      });
      return form;
    });
  }
  async function remove(a) {
    const ok = await confirmAction(`Delete admin ${a.username}?`,
      "They are logged out and their API tokens stop working. Their users stay, owned by nobody in particular.", "Delete admin");
    if (!ok) return;
    try { await del(`/admins/${a.id}`); toast(`Admin ${a.username} deleted`); } catch (err) { toast(err.message, "bad"); }
    await load();
  }
  await load();
}

/** `used` of `max` (shown by `show`), or `used` alone without a bound. */
function bound(used, max, show) {
  return max === null || max === undefined ? show(used) : `${show(used)} of ${show(max)}`;
}

async function adminForm(a) {
  const clusters = await get("/clusters");
  const editing = Boolean(a);
  const q = (a && a.quota) || {};
  return dialog(editing ? `Edit admin ${a.username}` : "New admin", (close) => {
    const username = h("input", { name: "username", required: true, maxlength: 64, value: a ? a.username : "", autofocus: true });
    const pass = h("input", { name: "password", type: "password", autocomplete: "new-password", required: true, minlength: 12, maxlength: 256 });
    const role = h("select", { name: "role" },
      ROLES.map(([v, t]) => h("option", { value: v, selected: (a ? a.role : "reseller") === v }, t)));
    const users = h("input", { name: "quota.max_users", type: "number", min: 0, value: q.max_users ?? "", placeholder: "no bound" });
    const traffic = h("input", { name: "quota.max_traffic", type: "number", min: 0, step: "0.1", value: q.max_traffic != null ? +(q.max_traffic / GIB).toFixed(2) : "", placeholder: "no bound" });
    const days = h("input", { name: "quota.max_expiry_days", type: "number", min: 1, max: 36500, value: q.max_expiry_days ?? "", placeholder: "no bound" });
    const boxes = clusters.map((c) => h("label", { class: "check" },
      h("input", { type: "checkbox", name: "quota.clusters", value: c.id, checked: (q.clusters || []).includes(c.id) }), ` ${c.name}`));
    const quota = h("fieldset", { class: "quota", "data-quota": "" },
      h("legend", {}, "Quota"),
      field("Users", users, "At most this many users of theirs"),
      field("Traffic to hand out (GiB)", traffic, "Their users' traffic limits add up to at most this; each user then needs a limit"),
      field("Longest expiry (days)", days, "Each of their users expires (or is on hold) at most this many days ahead"),
      h("div", { class: "field", "data-field": "quota.clusters" }, h("span", {}, "Clusters"), ...boxes,
        h("small", { class: "hint" }, "None ticked: every cluster"), h("small", { class: "error", role: "alert" })));
    const showQuota = () => { quota.hidden = role.value !== "reseller"; };
    role.addEventListener("change", showQuota);
    showQuota();
    const form = h("form", {},
      field("User name", username),
      editing ? null : field("Password", pass, "12 to 256 characters"),
      field("Role", role),
      quota,
      h("p", { class: "form-error", role: "alert" }),
      h("div", { class: "actions" },
        h("button", { type: "button", onclick: () => close(undefined) }, "Cancel"),
        h("button", { type: "submit", class: "primary" }, editing ? "Save" : "Add admin")));
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

