// Users: the list with status and usage, the form for limits and expiry, the
// subscription link with its QR code, and revoking the link.

import { h, fill, field, dialog, showError, confirmAction, copy, toast } from "./dom.js";
import { get, post, put, del } from "./api.js";
import { bytes, when } from "./format.js";
import { t, msg, lang } from "./i18n.js";
import { routingForm } from "./routing_form.js";
import { importDialog } from "./import.js";
import { bulkDialog } from "./users_bulk.js";

const STATUS = { active: msg("Active"), limited: msg("Limited"), expired: msg("Expired"), disabled: msg("Disabled"), on_hold: msg("On hold") };
const GIB = 1024 ** 3;
const PAGE = 100;
const SORTS = [["id", msg("Newest last")], ["username", msg("Name")], ["expires", msg("Expiry")], ["usage", msg("Usage")], ["online", msg("Last online")]];

/** Names joined into one list, with the language's comma. */
const joined = (items) => items.join(lang() === "fa" ? "، " : ", ");

export async function usersPage(main, ctx) {
  const search = h("input", { name: "search", type: "search", placeholder: t("Name contains…"), "aria-label": t("Search users") });
  const list = h("div", {});
  const count = h("span", { class: "muted" });
  const reseller = document.body.dataset.role === "reseller";
  const clusters = reseller ? [] : await get("/clusters");
  const status = h("select", { name: "status" }, h("option", { value: "" }, t("Any status")),
    Object.entries(STATUS).map(([v, label]) => h("option", { value: v }, t(label))));
  const cluster = h("select", { name: "cluster" }, h("option", { value: "" }, t("Any cluster")),
    clusters.map((c) => h("option", { value: c.id }, c.name)));
  const sort = h("select", { name: "sort" }, SORTS.map(([v, label]) => h("option", { value: v }, t(label))));
  const desc = h("input", { type: "checkbox", name: "desc" });
  const pager = h("div", { class: "pager", "data-pager": "" });
  const selected = new Set();
  let offset = 0;
  const filters = h("form", { class: "filters", "aria-label": t("Filter users") },
    field(t("Status"), status), reseller ? null : field(t("Cluster"), cluster), field(t("Sort by"), sort),
    h("label", { class: "check" }, desc, " ", t("Descending")));
  filters.addEventListener("change", () => { offset = 0; load(true); });
  filters.addEventListener("submit", (e) => e.preventDefault());
  /** The filter as the bulk change names it. */
  const filterBody = () => ({
    search: search.value.trim() || null,
    status: status.value || null,
    cluster: cluster.value ? Number(cluster.value) : null,
  });
  const quota = h("p", { class: "muted", "data-quota": "" });
  async function showQuota() {
    if (document.body.dataset.role !== "reseller") return;
    const r = (await get("/session")).reseller;
    if (!r) return;
    const q = r.quota;
    const parts = [
      q.max_users != null ? t("{used} of {n} users", { used: r.used.users, n: q.max_users }) : t("{n} users", { n: r.used.users }),
      q.max_traffic != null ? t("{used} of {limit} handed out", { used: bytes(r.used.traffic), limit: bytes(q.max_traffic) }) : null,
      q.max_expiry_days != null ? t("expiry at most {n} days ahead", { n: q.max_expiry_days }) : null,
    ].filter(Boolean);
    quota.textContent = t("Your quota: {parts}.", { parts: joined(parts) });
  }
  fill(main,
    h("div", { class: "page-head" }, h("h1", {}, t("Users")), count,
      h("div", { class: "actions" }, search,
        // Imports make admins: the owner's alone.
        document.body.dataset.role === "owner"
          ? h("button", { type: "button", "data-import": "", onclick: async () => { if (await importDialog()) await load(true); } }, t("Import…"))
          : null,
        // Bulk changes are the owner's and admins'.
        reseller ? null : h("button", { type: "button", "data-bulk": "", onclick: async () => {
          if (await bulkDialog([...selected], filterBody())) { selected.clear(); await load(true); }
        } }, t("Change many…")),
        h("button", { type: "button", class: "primary", "data-new-user": "", onclick: () => edit(null) }, t("New user")))),
    quota,
    filters,
    list,
    pager);
  let last = "";
  async function load(force) {
    const q = search.value.trim();
    const params = new URLSearchParams({ limit: String(PAGE), offset: String(offset), sort: sort.value });
    if (q) params.set("search", q);
    if (status.value) params.set("status", status.value);
    if (cluster.value) params.set("cluster", cluster.value);
    if (desc.checked) params.set("desc", "true");
    const page = await get(`/users?${params}`);
    const now = JSON.stringify(page);
    if (!force && (now === last || document.querySelector("dialog[open]"))) return;
    last = now;
    count.textContent = t("{n} in all", { n: page.total });
    fill(pager, page.total > PAGE ? [
      h("button", { type: "button", disabled: offset === 0, onclick: () => { offset = Math.max(0, offset - PAGE); load(true); } }, t("Previous")),
      h("span", { class: "muted" }, ` ${t("{from}–{to} of {total}", { from: offset + 1, to: Math.min(offset + PAGE, page.total), total: page.total })} `),
      h("button", { type: "button", disabled: offset + PAGE >= page.total, onclick: () => { offset += PAGE; load(true); } }, t("Next")),
    ] : []);
    await showQuota();
    fill(list, page.users.length ? table(page.users) : h("p", { class: "muted" }, q ? t("Nobody matches.") : t("No user yet.")));
  }
  function table(users) {
    return h("div", { class: "table-wrap" }, h("table", { class: "users" },
      h("thead", {}, h("tr", {}, reseller ? null : h("th", { scope: "col" }, h("span", { class: "visually-hidden" }, t("Selected"))),
        [t("User"), t("Status"), t("Usage"), t("Expires"), t("Online"), ""].map((text) => h("th", { scope: "col" }, text)))),
      h("tbody", {}, users.map((u) => h("tr", { "data-user": u.id },
        reseller ? null : h("td", {}, h("input", { type: "checkbox", name: "select", "aria-label": t("Select {name}", { name: u.username }), checked: selected.has(u.id),
          onchange: (e) => { if (e.target.checked) selected.add(u.id); else selected.delete(u.id); } })),
        h("th", { scope: "row" }, h("span", { class: "username" }, u.username), u.note ? h("small", { class: "muted block" }, u.note) : null, limits(u)),
        h("td", {}, h("span", { class: `badge status-${u.status}` }, STATUS[u.status] ? t(STATUS[u.status]) : u.status)),
        h("td", {}, usage(u)),
        h("td", {}, u.expires_ms ? when(u.expires_ms) : u.on_hold_days ? t("{n} days after first use", { n: u.on_hold_days }) : t("never")),
        h("td", {}, u.online_ms ? when(u.online_ms) : "—"),
        h("td", { class: "row-actions" },
          h("button", { type: "button", onclick: () => subscription(u) }, t("Subscription")),
          h("button", { type: "button", onclick: () => edit(u) }, t("Edit")),
          h("button", { type: "button", "data-routing": u.id, onclick: () => routingForm(t("Routing for {name}", { name: u.username }),
            `/users/${u.id}/routing`, t("their cluster's routing, else the panel's default")) }, t("Routing…")),
          h("button", { type: "button", class: "danger-text", onclick: () => remove(u) }, t("Delete"))))))));
  }
  async function edit(u) {
    if (await userForm(u)) await load(true);
  }
  async function remove(u) {
    const ok = await confirmAction(t("Delete user {name}?", { name: u.username }),
      t("Their connections are cut and their subscription link stops working. Their usage history is deleted."), t("Delete user"));
    if (!ok) return;
    try { await del(`/users/${u.id}`); toast(t("User {name} deleted", { name: u.username })); } catch (err) { toast(err.message, "bad"); }
    await load(true);
  }
  async function subscription(u) {
    await subscriptionDialog(u);
    await load(true);
  }
  let timer = null;
  search.addEventListener("input", () => { clearTimeout(timer); timer = setTimeout(() => { offset = 0; load(true); }, 250); });
  await load(true);
  ctx.every(5000, () => load(false).catch(() => {}));
}

/** The user's device and address limits, when set, as one line under the name. */
function limits(u) {
  const parts = [];
  if (u.device_limit) parts.push(t("{n} devices", { n: u.device_limit }));
  if (u.address_limit) parts.push(t("{n} addresses at once per server", { n: u.address_limit }));
  return parts.length ? h("small", { class: "muted block", "data-user-limits": "" }, t("Limits: {limits}", { limits: joined(parts) })) : null;
}

function usage(u) {
  const used = u.used_up + u.used_down;
  if (!u.traffic_limit) return h("span", {}, t("{used} of unlimited", { used: bytes(used) }));
  const share = Math.min(1, used / u.traffic_limit);
  return h("div", { class: "usage" },
    h("progress", { max: u.traffic_limit, value: Math.min(used, u.traffic_limit), "aria-label": t("{name}'s usage", { name: u.username }) }),
    h("small", {}, t("{used} of {limit} ({share} %)", { used: bytes(used), limit: bytes(u.traffic_limit), share: Math.round(share * 100) })));
}

async function userForm(u) {
  const editing = Boolean(u);
  const clusters = await get("/clusters");
  const plans = editing ? [] : await get("/plans");
  return dialog(editing ? t("Edit user {name}", { name: u.username }) : t("New user"), (close) => {
    const username = h("input", { name: "username", required: true, maxlength: 64, value: u ? u.username : "", autofocus: true });
    const enabled = h("input", { type: "checkbox", name: "enabled", checked: u ? u.enabled : true });
    const limit = h("input", { name: "traffic_limit", type: "number", min: 0, step: "0.1", value: u && u.traffic_limit ? +(u.traffic_limit / GIB).toFixed(2) : "", placeholder: t("unlimited") });
    const reset = h("select", { name: "reset_strategy" },
      [["none", t("Never")], ["day", t("Every day")], ["week", t("Every week")], ["month", t("Every month (1st)")],
        ["month_from_start", t("Every month (from the day created)")], ["year", t("Every year")]]
        .map(([v, label]) => h("option", { value: v, selected: (u ? u.reset_strategy : "none") === v }, label)));
    const expires = h("input", { name: "expires_ms", type: "datetime-local", value: u && u.expires_ms ? local(u.expires_ms) : "" });
    const hold = h("input", { name: "on_hold_days", type: "number", min: 1, value: u && u.on_hold_days ? u.on_hold_days : "", placeholder: t("off") });
    const devices = h("input", { name: "device_limit", type: "number", min: 1, value: u && u.device_limit ? u.device_limit : "", placeholder: t("no limit") });
    const addresses = h("input", { name: "address_limit", type: "number", min: 1, max: 1000, value: u && u.address_limit ? u.address_limit : "", placeholder: t("no limit") });
    const note = h("textarea", { name: "note", rows: 2, maxlength: 1000 }, u ? u.note : "");
    const every = h("input", { type: "checkbox", name: "all_clusters", checked: !u || !u.clusters });
    const boxes = clusters.map((c) => h("input", { type: "checkbox", name: "clusters", value: c.id, checked: Boolean(u && u.clusters && u.clusters.includes(c.id)) }));
    const chosen = h("div", {}, ...boxes.map((b, i) => h("label", { class: "check" }, b, ` ${clusters[i].name}`)));
    const showChosen = () => { chosen.hidden = every.checked; };
    every.addEventListener("change", showChosen);
    showChosen();
    const inClusters = h("div", { class: "field", "data-field": "clusters" }, h("span", {}, t("Clusters")),
      h("label", { class: "check" }, every, " ", t("Every cluster")), chosen,
      h("small", { class: "hint" }, t("Whose routes the user gets")),
      h("small", { class: "error", role: "alert" }));
    // A plan fills the fields below; they stay editable.
    const plan = h("select", { name: "plan" }, h("option", { value: "" }, t("None")),
      plans.map((p) => h("option", { value: p.id }, p.name)));
    plan.addEventListener("change", () => {
      const p = plans.find((x) => String(x.id) === plan.value);
      if (!p) return;
      limit.value = p.traffic_limit ? +(p.traffic_limit / GIB).toFixed(2) : "";
      reset.value = p.reset_strategy;
      expires.value = p.expiry_days && !p.on_hold ? local(Date.now() + p.expiry_days * 86400000) : "";
      hold.value = p.expiry_days && p.on_hold ? p.expiry_days : "";
      devices.value = p.device_limit || "";
      addresses.value = p.address_limit || "";
      every.checked = !p.clusters;
      for (const b of boxes) b.checked = Boolean(p.clusters && p.clusters.includes(Number(b.value)));
      every.dispatchEvent(new Event("change"));
    });
    const form = h("form", {},
      plans.length ? field(t("From plan"), plan, t("Fills the fields below")) : null,
      field(t("User name"), username),
      h("label", { class: "check" }, enabled, " ", t("Enabled")),
      field(t("Traffic limit (GiB)"), limit, t("Empty: unlimited")),
      field(t("Usage resets"), reset),
      field(t("Expires"), expires, t("Empty: never")),
      field(t("On hold: expires this many days after the first connection"), hold),
      field(t("Devices"), devices, t("Apps that send a device id; empty: no limit")),
      field(t("Addresses at once"), addresses, t("Source IP addresses with connections open at the same time, on each server; one more is refused. Empty: no limit")),
      inClusters,
      field(t("Note"), note),
      h("p", { class: "form-error", role: "alert" }),
      h("div", { class: "actions" },
        h("button", { type: "button", onclick: () => close(undefined) }, t("Cancel")),
        h("button", { type: "submit", class: "primary" }, editing ? t("Save") : t("Create user"))));
    form.addEventListener("submit", async (e) => {
      e.preventDefault();
      showError(form, null);
      const body = {
        username: username.value.trim(), enabled: enabled.checked, note: note.value,
        traffic_limit: limit.value === "" ? null : Math.round(Number(limit.value) * GIB),
        reset_strategy: reset.value,
        expires_ms: expires.value ? new Date(expires.value).getTime() : null,
        on_hold_days: hold.value ? Number(hold.value) : null,
        device_limit: devices.value ? Number(devices.value) : null,
        address_limit: addresses.value ? Number(addresses.value) : null,
        clusters: every.checked ? null : boxes.filter((b) => b.checked).map((b) => Number(b.value)),
      };
      try {
        close(editing ? await put(`/users/${u.id}`, body) : await post("/users", body));
      } catch (err) {
        showError(form, err);
      }
    });
    return form;
  });
}

function local(ms) {
  const d = new Date(ms);
  const pad = (n) => String(n).padStart(2, "0");
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}`;
}

/** The link, its QR code, copy, and revoke. */
async function subscriptionDialog(u) {
  const sub = await get(`/users/${u.id}/subscription`);
  return dialog(t("Subscription of {name}", { name: u.username }), (close) => {
    const body = h("div", { class: "subscription" });
    const draw = (s, version) => fill(body,
      h("img", { class: "qr", src: `/api/v1/users/${u.id}/subscription.svg?v=${version}`, alt: t("QR code of {name}'s subscription link", { name: u.username }), width: 240, height: 240 }),
      h("div", { class: "copy-row" }, h("code", { "data-subscription-url": "" }, s.url),
        h("button", { type: "button", onclick: () => copy(s.url, t("Subscription link copied")) }, t("Copy"))),
      h("p", { class: "muted" }, t("Add this link in the user's app (or scan the code); the app keeps its entries up to date from it.")),
      h("div", { class: "actions" },
        h("button", { type: "button", class: "danger", onclick: revoke }, t("Revoke link…")),
        h("button", { type: "button", class: "primary", onclick: () => close(true) }, t("Done"))));
    let version = 0;
    async function revoke() {
      const ok = await confirmAction(t("Revoke {name}'s link?", { name: u.username }),
        t("The current link stops working at once; the user needs the new one in their app."), t("Revoke link"));
      if (!ok) return;
      try {
        await post(`/users/${u.id}/revoke-subscription`);
        draw(await get(`/users/${u.id}/subscription`), ++version);
        toast(t("A new link replaces the old one"));
      } catch (err) { toast(err.message, "bad"); }
    }
    draw(sub, version);
    return body;
  });
}
