// Bringing users from another panel: its database file (Remnawave's and
// Marzban's on MySQL: the database's URL), a dry run first, then the import; the
// report says what was added, updated and disabled, the source's inbounds and
// nodes, and what could not be carried.

import { h, fill, field, dialog } from "./dom.js";
import { get, post, upload } from "./api.js";
import { t, msg, lang } from "./i18n.js";

const SOURCES = [
  ["marzban", msg("Marzban 0.8 (db.sqlite3)")],
  ["marzban-mysql", msg("Marzban 0.8 on MySQL or MariaDB (its database URL)")],
  ["pasarguard", msg("PasarGuard 1.0 to 5.2 (db.sqlite3)")],
  ["pasarguard-server", msg("PasarGuard 1.0 to 5.2 on PostgreSQL, MySQL or MariaDB (its database URL)")],
  ["marzneshin", msg("Marzneshin 0.4 to 0.7 (db.sqlite3; keys by xxh128)")],
  ["marzneshin-server", msg("Marzneshin 0.4 to 0.7 on PostgreSQL, MySQL or MariaDB (its database URL; keys by xxh128)")],
  ["3x-ui", msg("3x-ui 2.x or 3.x (x-ui.db)")],
  ["remnawave", msg("Remnawave 2.3–3.3 (its PostgreSQL database)")],
];

/** The sources read by a database URL: the API's source and the URL's form. */
const BY_URL = {
  remnawave: ["remnawave", "postgres://USER:PASSWORD@HOST:5432/DB"],
  "marzban-mysql": ["marzban", "mysql://USER:PASSWORD@HOST:3306/marzban"],
  "pasarguard-server": ["pasarguard", "postgres://USER:PASSWORD@HOST:5432/pasarguard"],
  "marzneshin-server": ["marzneshin", "mysql://USER:PASSWORD@HOST:3306/marzneshin"],
};

/** Names joined into one list, with the language's comma. */
const joined = (items) => items.join(lang() === "fa" ? "، " : ", ");

/** The import dialog; resolves true when something was imported. */
export function importDialog() {
  return dialog(t("Import users"), (close) => {
    const source = h("select", { name: "source" }, SOURCES.map(([v, label]) => h("option", { value: v }, t(label))));
    const file = h("input", { name: "file", type: "file" });
    const url = h("input", { name: "database_url", type: "password", autocomplete: "off" });
    const fileField = field(t("Database file"), file, t("Copy it off the old server first; it is only read."));
    const urlField = field(t("Database URL"), url, t("Read in one read-only transaction; never stored."));
    const byUrl = () => source.value in BY_URL;
    const shown = () => {
      fileField.hidden = byUrl();
      urlField.hidden = !byUrl();
      if (byUrl()) url.placeholder = BY_URL[source.value][1];
    };
    source.addEventListener("change", shown);
    shown();
    const missing = h("input", { type: "checkbox", name: "disable_missing" });
    // The server to make the source's inbounds on (the API's `server`), or none.
    const server = h("select", { name: "server" }, h("option", { value: "" }, t("None: only list them")));
    get("/servers").then((list) => list.forEach((sv) => server.append(h("option", { value: sv.name }, sv.name))))
      .catch(() => {});
    const error = h("p", { class: "form-error", role: "alert" });
    const result = h("div", { class: "import-report", "aria-live": "polite" });
    let imported = false;
    const run = async (dry) => {
      error.textContent = "";
      const f = file.files[0];
      if (byUrl() && !url.value) { error.textContent = t("Give the source panel's database URL."); return; }
      if (!byUrl() && !f) { error.textContent = t("Choose the source panel's database file."); return; }
      fill(result, h("p", { class: "muted" }, dry ? t("Reading…") : t("Importing…")));
      const q = new URLSearchParams({ dry_run: dry, disable_missing: missing.checked });
      if (server.value) q.set("server", server.value);
      const path = `/imports/${byUrl() ? BY_URL[source.value][0] : source.value}?${q}`;
      try {
        const report = byUrl() ? await post(path, { database_url: url.value }) : await upload(path, f);
        fill(result, ...describe(report));
        if (!dry) imported = true;
      } catch (err) {
        fill(result);
        error.textContent = err.message;
      }
    };
    return h("form", { onsubmit: (e) => { e.preventDefault(); run(false); } },
      field(t("From"), source),
      fileField, urlField,
      field(t("Make its inbounds on"), server,
        t("Those a node here serves, with their ports, transports, security and REALITY keys; one whose name an inbound here has is mapped to it.")),
      h("label", { class: "check" }, missing, " ", t("Disable users an earlier import brought that the source no longer has")),
      error, result,
      h("div", { class: "actions" },
        h("button", { type: "button", onclick: () => close(imported) }, t("Close")),
        h("button", { type: "button", "data-dry-run": "", onclick: () => run(true) }, t("Dry run")),
        h("button", { type: "submit", class: "primary" }, t("Import"))));
  });
}

/** The report as paragraphs and lists. */
function describe(r) {
  // A count, and the names when there are any: `plain` and `named` are messages.
  const line = (list, plain, named) => h("li", {},
    list.length ? t(named, { n: list.length, names: joined(list) }) : t(plain, { n: 0 }));
  const facts = { source: r.source, schema: r.schema, n: r.users_read };
  const out = [
    h("p", { "data-report-summary": "" }, r.dry_run
      ? t("{source} (schema {schema}), dry run: nothing kept: {n} users read.", facts)
      : t("{source} (schema {schema}): {n} users read.", facts)),
    h("ul", {}, r.dry_run ? [
      line(r.added, msg("{n} would be added"), msg("{n} would be added: {names}")),
      line(r.updated, msg("{n} would be updated"), msg("{n} would be updated: {names}")),
      line(r.disabled, msg("{n} would be disabled"), msg("{n} would be disabled: {names}")),
    ] : [
      line(r.added, msg("{n} added"), msg("{n} added: {names}")),
      line(r.updated, msg("{n} updated"), msg("{n} updated: {names}")),
      line(r.disabled, msg("{n} disabled"), msg("{n} disabled: {names}")),
    ]),
  ];
  if (r.inbounds.length) {
    out.push(h("h3", {}, t("Inbounds")), h("ul", {}, r.inbounds.map((i) =>
      h("li", {}, t("{tag}: {protocol} over {network} ({security}), port {port}: {note}",
        { tag: i.tag, protocol: i.protocol, network: i.network, security: i.security, port: String(i.port), note: i.note })))));
  }
  if (r.nodes.length) {
    out.push(h("h3", {}, t("Nodes to join")), h("ul", {}, r.nodes.map((n) =>
      h("li", {}, t("{name} at {address}:{port}", { name: n.name, address: n.address, port: String(n.port) })))));
  }
  if (r.not_carried.length) {
    out.push(h("h3", {}, t("Not carried ({n})", { n: r.not_carried.length })),
      h("ul", { "data-not-carried": "" }, r.not_carried.map((n) => h("li", {}, `${n.what}: ${n.reason}`))));
  }
  return out;
}
