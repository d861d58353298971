// The admin's account: change the password (every other session ends), the sessions
// logged in as them (this one marked, any other revocable), and API tokens (made with
// an optional expiry and a scope; the secret is shown once).

import { h, fill, field, showError, confirmAction, copy, toast } from "./dom.js";
import { get, post, put, del } from "./api.js";
import { when } from "./format.js";

const DAY = 86400000;

export async function accountPage(main) {
  const sessions = h("div", { "data-sessions": "" });
  const tokens = h("div", { "data-tokens": "" });
  fill(main,
    h("div", { class: "page-head" }, h("h1", {}, "Account")),
    passwordCard(() => loadSessions()),
    h("section", { class: "card", "aria-labelledby": "sessions-h" },
      h("h2", { id: "sessions-h" }, "Sessions"),
      h("p", { class: "muted" }, "Where you are logged in. Revoking a session logs it out at once."),
      sessions),
    h("section", { class: "card", "aria-labelledby": "tokens-h" },
      h("h2", { id: "tokens-h" }, "API tokens"),
      h("p", { class: "muted" }, "For scripts: send as Authorization: Bearer <token>. A read-only token may only read."),
      tokenForm(() => loadTokens()),
      tokens));

  async function loadSessions() {
    const list = await get("/sessions");
    list.sort((a, b) => Number(b.current) - Number(a.current));
    fill(sessions, h("div", { class: "table-wrap" }, h("table", { class: "sessions" },
      h("thead", {}, h("tr", {}, ["Logged in", "Last seen", "Address", "Browser", ""].map((t) => h("th", { scope: "col" }, t)))),
      h("tbody", {}, list.map((s) => h("tr", { "data-session": s.id, "data-current": s.current ? "" : null },
        h("td", {}, when(s.created_ms), s.current ? h("span", { class: "badge" }, " This session") : null),
        h("td", {}, when(s.last_seen_ms)),
        h("td", {}, s.address || "—"),
        h("td", {}, h("small", {}, s.user_agent || "—")),
        h("td", { class: "row-actions" }, s.current ? null :
          h("button", { type: "button", class: "danger-text", "data-revoke": s.id,
            "aria-label": `Revoke the session from ${s.address || "an unknown address"} of ${when(s.created_ms)}`,
            onclick: () => revoke(s) }, "Revoke"))))))));
  }
  async function revoke(s) {
    try {
      await del(`/sessions/${encodeURIComponent(s.id)}`);
      toast("Session revoked");
    } catch (err) { toast(err.message, "bad"); }
    await loadSessions();
  }

  async function loadTokens() {
    const list = await get("/tokens");
    const now = Date.now();
    fill(tokens, list.length ? h("div", { class: "table-wrap" }, h("table", { class: "tokens" },
      h("thead", {}, h("tr", {}, ["Name", "Scope", "Expires", "Last used", ""].map((t) => h("th", { scope: "col" }, t)))),
      h("tbody", {}, list.map((t) => h("tr", { "data-token": t.id },
        h("th", { scope: "row" }, t.name),
        h("td", { "data-scope": t.scope }, t.scope === "read" ? "Read only" : "Full"),
        h("td", {}, t.expires_ms ? (t.expires_ms <= now ? `expired ${when(t.expires_ms)}` : when(t.expires_ms)) : "never"),
        h("td", {}, when(t.last_used_ms)),
        h("td", { class: "row-actions" },
          h("button", { type: "button", class: "danger-text", "aria-label": `Delete token ${t.name}`,
            onclick: () => removeToken(t) }, "Delete")))))))
      : h("p", { class: "muted" }, "No API token yet."));
  }
  async function removeToken(t) {
    const ok = await confirmAction(`Delete token ${t.name}?`, "Scripts using it are refused from now on.", "Delete token");
    if (!ok) return;
    try { await del(`/tokens/${t.id}`); toast(`Token ${t.name} deleted`); } catch (err) { toast(err.message, "bad"); }
    await loadTokens();
  }

  await Promise.all([loadSessions(), loadTokens()]);
}

function passwordCard(changed) {
  const current = h("input", { name: "current_password", type: "password", autocomplete: "current-password", required: true });
  const next = h("input", { name: "new_password", type: "password", autocomplete: "new-password", required: true, minlength: 12, maxlength: 256 });
  const again = h("input", { name: "repeat_password", type: "password", autocomplete: "new-password", required: true });
  const form = h("form", { class: "card", "aria-label": "Change password", "data-password-form": "" },
    h("h2", {}, "Password"),
    field("Current password", current),
    field("New password", next, "12 characters or more. Every other session is logged out."),
    field("New password again", again),
    h("p", { class: "form-error", role: "alert" }),
    h("div", { class: "actions" }, h("button", { class: "primary", type: "submit" }, "Change password")));
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    showError(form, null);
    if (next.value !== again.value) {
      showError(form, { field: "repeat_password", message: "does not match the new password" });
      return;
    }
    try {
      const r = await put("/account/password", { current_password: current.value, new_password: next.value });
      form.reset();
      toast(r.sessions_ended ? `Password changed; ${r.sessions_ended} other session(s) logged out` : "Password changed");
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
    h("option", { value: "full" }, "Full: read and change"),
    h("option", { value: "read" }, "Read only"));
  const expiry = h("select", { name: "expires_ms" },
    h("option", { value: "" }, "Never"),
    h("option", { value: "7" }, "In 7 days"),
    h("option", { value: "30" }, "In 30 days"),
    h("option", { value: "90" }, "In 90 days"),
    h("option", { value: "365" }, "In a year"));
  const secret = h("div", { "data-secret": "" });
  const form = h("form", { class: "token-form", "aria-label": "New API token" },
    field("Token name", name, "What it is for: ci, backup script."),
    field("Scope", scope),
    field("Expires", expiry),
    h("p", { class: "form-error", role: "alert" }),
    h("div", { class: "actions" }, h("button", { class: "primary", type: "submit" }, "Create token")),
    secret);
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    showError(form, null);
    const body = { name: name.value, scope: scope.value };
    if (expiry.value) body.expires_ms = Date.now() + Number(expiry.value) * DAY;
    try {
      const t = await post("/tokens", body);
      name.value = "";
      const box = h("input", { name: "secret", readonly: true, value: t.secret, "aria-label": `The secret of token ${t.name}` });
      fill(secret, h("p", { class: "notice" }, "Copy the token now: it is not shown again."),
        h("div", { class: "actions" }, box,
          h("button", { type: "button", onclick: () => copy(t.secret, "Token copied") }, "Copy")));
      await done();
    } catch (err) {
      showError(form, err);
    }
  });
  return form;
}
