// The admin's account: change the password (every other session ends), the sessions
// logged in as them (this one marked, any other revocable), and API tokens (made with
// an optional expiry and a scope; the secret is shown once).

import { h, fill, field, showError, confirmAction, copy, toast } from "./dom.js";
import { get, post, put, del } from "./api.js";
import { when } from "./format.js";
import { t } from "./i18n.js";

const DAY = 86400000;

export async function accountPage(main) {
  const sessions = h("div", { "data-sessions": "" });
  const tokens = h("div", { "data-tokens": "" });
  fill(main,
    h("div", { class: "page-head" }, h("h1", {}, t("Account"))),
    passwordCard(() => loadSessions()),
    h("section", { class: "card", "aria-labelledby": "sessions-h" },
      h("h2", { id: "sessions-h" }, t("Sessions")),
      h("p", { class: "muted" }, t("Where you are logged in. Revoking a session logs it out at once.")),
      sessions),
    h("section", { class: "card", "aria-labelledby": "tokens-h" },
      h("h2", { id: "tokens-h" }, t("API tokens")),
      h("p", { class: "muted" }, t("For scripts: send as Authorization: Bearer <token>. A read-only token may only read.")),
      tokenForm(() => loadTokens()),
      tokens));

  async function loadSessions() {
    const list = await get("/sessions");
    list.sort((a, b) => Number(b.current) - Number(a.current));
    fill(sessions, h("div", { class: "table-wrap" }, h("table", { class: "sessions" },
      h("thead", {}, h("tr", {}, [t("Logged in"), t("Last seen"), t("Address"), t("Browser"), ""].map((label) => h("th", { scope: "col" }, label)))),
      h("tbody", {}, list.map((s) => h("tr", { "data-session": s.id, "data-current": s.current ? "" : null },
        h("td", {}, when(s.created_ms), s.current ? h("span", { class: "badge" }, " ", t("This session")) : null),
        h("td", {}, when(s.last_seen_ms)),
        h("td", {}, s.address || "—"),
        h("td", {}, h("small", {}, s.user_agent || "—")),
        h("td", { class: "row-actions" }, s.current ? null :
          h("button", { type: "button", class: "danger-text", "data-revoke": s.id,
            "aria-label": s.address
              ? t("Revoke the session from {address} of {time}", { address: s.address, time: when(s.created_ms) })
              : t("Revoke the session from an unknown address of {time}", { time: when(s.created_ms) }),
            onclick: () => revoke(s) }, t("Revoke")))))))));
  }
  async function revoke(s) {
    try {
      await del(`/sessions/${encodeURIComponent(s.id)}`);
      toast(t("Session revoked"));
    } catch (err) { toast(err.message, "bad"); }
    await loadSessions();
  }

  async function loadTokens() {
    const list = await get("/tokens");
    const now = Date.now();
    fill(tokens, list.length ? h("div", { class: "table-wrap" }, h("table", { class: "tokens" },
      h("thead", {}, h("tr", {}, [t("Name"), t("Scope"), t("Expires"), t("Last used"), ""].map((label) => h("th", { scope: "col" }, label)))),
      h("tbody", {}, list.map((tok) => h("tr", { "data-token": tok.id },
        h("th", { scope: "row" }, tok.name),
        h("td", { "data-scope": tok.scope }, tok.scope === "read" ? t("Read only") : t("Full")),
        h("td", {}, tok.expires_ms
          ? (tok.expires_ms <= now ? t("expired {time}", { time: when(tok.expires_ms) }) : when(tok.expires_ms))
          : t("never")),
        h("td", {}, when(tok.last_used_ms)),
        h("td", { class: "row-actions" },
          h("button", { type: "button", class: "danger-text", "aria-label": t("Delete token {name}", { name: tok.name }),
            onclick: () => removeToken(tok) }, t("Delete"))))))))
      : h("p", { class: "muted" }, t("No API token yet.")));
  }
  async function removeToken(tok) {
    const ok = await confirmAction(t("Delete token {name}?", { name: tok.name }),
      t("Scripts using it are refused from now on."), t("Delete token"));
    if (!ok) return;
    try {
      await del(`/tokens/${tok.id}`);
      toast(t("Token {name} deleted", { name: tok.name }));
    } catch (err) { toast(err.message, "bad"); }
    await loadTokens();
  }

  await Promise.all([loadSessions(), loadTokens()]);
}

function passwordCard(changed) {
  const current = h("input", { name: "current_password", type: "password", autocomplete: "current-password", required: true });
  const next = h("input", { name: "new_password", type: "password", autocomplete: "new-password", required: true, minlength: 12, maxlength: 256 });
  const again = h("input", { name: "repeat_password", type: "password", autocomplete: "new-password", required: true });
  const form = h("form", { class: "card", "aria-label": t("Change password"), "data-password-form": "" },
    h("h2", {}, t("Password")),
    field(t("Current password"), current),
    field(t("New password"), next, t("12 characters or more. Every other session is logged out.")),
    field(t("New password again"), again),
    h("p", { class: "form-error", role: "alert" }),
    h("div", { class: "actions" }, h("button", { class: "primary", type: "submit" }, t("Change password"))));
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    showError(form, null);
    if (next.value !== again.value) {
      showError(form, { field: "repeat_password", message: t("does not match the new password") });
      return;
    }
    try {
      const r = await put("/account/password", { current_password: current.value, new_password: next.value });
      form.reset();
      toast(r.sessions_ended
        ? t("Password changed; {n} other session(s) logged out", { n: r.sessions_ended })
        : t("Password changed"));
      await changed();
    } catch (err) {
      showError(form, err);
    }
  });
  return form;
}

function tokenForm(done) {
  const name = h("input", { name: "name", required: true, maxlength: 64 });
  const scope = h("select", { name: "scope" },
    h("option", { value: "full" }, t("Full: read and change")),
    h("option", { value: "read" }, t("Read only")));
  const expiry = h("select", { name: "expires_ms" },
    h("option", { value: "" }, t("Never")),
    h("option", { value: "7" }, t("In {n} days", { n: 7 })),
    h("option", { value: "30" }, t("In {n} days", { n: 30 })),
    h("option", { value: "90" }, t("In {n} days", { n: 90 })),
    h("option", { value: "365" }, t("In a year")));
  const secret = h("div", { "data-secret": "" });
  const form = h("form", { class: "token-form", "aria-label": t("New API token") },
    field(t("Token name"), name, t("What it is for: ci, backup script.")),
    field(t("Scope"), scope),
    field(t("Expires"), expiry),
    h("p", { class: "form-error", role: "alert" }),
    h("div", { class: "actions" }, h("button", { class: "primary", type: "submit" }, t("Create token"))),
    secret);
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    showError(form, null);
    const body = { name: name.value, scope: scope.value };
    if (expiry.value) body.expires_ms = Date.now() + Number(expiry.value) * DAY;
    try {
      const made = await post("/tokens", body);
      name.value = "";
      const box = h("input", { name: "secret", readonly: true, value: made.secret, "aria-label": t("The secret of token {name}", { name: made.name }) });
      fill(secret, h("p", { class: "notice" }, t("Copy the token now: it is not shown again.")),
        h("div", { class: "actions" }, box,
          h("button", { type: "button", onclick: () => copy(made.secret, t("Token copied")) }, t("Copy"))));
      await done();
    } catch (err) {
      showError(form, err);
    }
  });
  return form;
}
