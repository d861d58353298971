// The audit log: who changed what, newest first, filtered by admin (the owner's
// list), kind of object and time; "Older" pages back.

import { h, fill, field } from "./dom.js";
import { get } from "./api.js";
import { when } from "./format.js";

const KINDS = ["user", "server", "inbound", "cluster", "route", "tunnel", "template", "admin", "token", "session", "account", "import"];

export async function auditPage(main, me) {
  const admins = me && me.role === "owner" ? await get("/admins") : [];
  const who = h("select", { name: "admin_id" }, h("option", { value: "" }, "Everyone"),
    admins.map((a) => h("option", { value: a.id }, a.username)));
  const kind = h("select", { name: "kind" }, h("option", { value: "" }, "Anything"),
    KINDS.map((k) => h("option", { value: k }, k)));
  const since = h("input", { name: "since", type: "date" });
  const until = h("input", { name: "until", type: "date" });
  const list = h("div", { "data-audit": "" });
  const older = h("button", { type: "button", "data-older": "", onclick: () => load(true) }, "Older");
  let rows = [];
  const filters = h("form", { class: "filters", "aria-label": "Filter the audit log" },
    admins.length ? field("Admin", who) : null, field("Object", kind), field("From", since), field("To", until));
  filters.addEventListener("change", () => load(false));
  filters.addEventListener("submit", (e) => { e.preventDefault(); load(false); });
  fill(main,
    h("div", { class: "page-head" }, h("h1", {}, "Audit log")),
    h("p", { class: "muted" }, "Every change made through the panel: who, what, which object and when. Reads and refused changes are not listed; no password or token is."),
    filters, list, older);
  async function load(more) {
    const q = new URLSearchParams({ limit: "100" });
    if (who.value) q.set("admin_id", who.value);
    if (kind.value) q.set("kind", kind.value);
    if (since.value) q.set("since_ms", String(new Date(`${since.value}T00:00`).getTime()));
    if (until.value) q.set("until_ms", String(new Date(`${until.value}T00:00`).getTime() + 86400000));
    if (more && rows.length) q.set("before", String(rows[rows.length - 1].id));
    const page = await get(`/audit?${q}`);
    rows = more ? rows.concat(page) : page;
    older.hidden = page.length < 100;
    fill(list, rows.length ? h("div", { class: "table-wrap" }, h("table", { class: "audit" },
      h("thead", {}, h("tr", {}, ["When", "Admin", "Action", "Object"].map((t) => h("th", { scope: "col" }, t)))),
      h("tbody", {}, rows.map((e) => h("tr", { "data-entry": e.id },
        h("td", {}, when(e.at_ms)),
        h("td", {}, e.admin),
        h("td", {}, e.action),
        h("td", {}, `${e.kind} ${e.object}`.trim()))))))
      : h("p", { class: "muted" }, "Nothing matches."));
  }
  await load(false);
}
