// The audit log: who changed what, newest first, filtered by admin (the owner's
// list), kind of object and time; "Older" pages back.

import { h, fill, field } from "./dom.js";
import { get } from "./api.js";
import { when } from "./format.js";
import { t, msg } from "./i18n.js";

/** The kinds of object the log can be filtered by (the API's names), with their names on screen. */
const KINDS = [["user", msg("user")], ["server", msg("server")], ["inbound", msg("inbound")], ["cluster", msg("cluster")],
  ["route", msg("route")], ["tunnel", msg("tunnel")], ["template", msg("template")], ["admin", msg("admin")],
  ["token", msg("token")], ["session", msg("session")], ["account", msg("account")], ["import", msg("import")]];

export async function auditPage(main, me) {
  const admins = me && me.role === "owner" ? await get("/admins") : [];
  const who = h("select", { name: "admin_id" }, h("option", { value: "" }, t("Everyone")),
    admins.map((a) => h("option", { value: a.id }, a.username)));
  const kind = h("select", { name: "kind" }, h("option", { value: "" }, t("Anything")),
    KINDS.map(([k, label]) => h("option", { value: k }, t(label))));
  const since = h("input", { name: "since", type: "date" });
  const until = h("input", { name: "until", type: "date" });
  const list = h("div", { "data-audit": "" });
  const older = h("button", { type: "button", "data-older": "", onclick: () => load(true) }, t("Older"));
  let rows = [];
  const filters = h("form", { class: "filters", "aria-label": t("Filter the audit log") },
    admins.length ? field(t("Admin"), who) : null, field(t("Object"), kind), field(t("From"), since), field(t("To"), until));
  filters.addEventListener("change", () => load(false));
  filters.addEventListener("submit", (e) => { e.preventDefault(); load(false); });
  fill(main,
    h("div", { class: "page-head" }, h("h1", {}, t("Audit log"))),
    h("p", { class: "muted" }, t("Every change made through the panel: who, what, which object and when. Reads and refused changes are not listed; no password or token is.")),
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
      h("thead", {}, h("tr", {}, [t("When"), t("Admin"), t("Action"), t("Object")].map((label) => h("th", { scope: "col" }, label)))),
      h("tbody", {}, rows.map((e) => h("tr", { "data-entry": e.id },
        h("td", {}, when(e.at_ms)),
        h("td", {}, e.admin),
        h("td", {}, e.action),
        h("td", {}, `${e.kind} ${e.object}`.trim()))))))
      : h("p", { class: "muted" }, t("Nothing matches.")));
  }
  await load(false);
}
