// Login, and where a first-time operator finds the generated password.

import { h, fill, field, showError } from "./dom.js";
import { call, get, setCsrf } from "./api.js";
import { t } from "./i18n.js";

export async function loginPage(main, done) {
  let hint = null;
  try {
    const setup = await get("/setup");
    if (setup && setup.password_file) {
      // One message; the file's name, in <code>, goes where {file} is.
      const [before, after = ""] = t("First start: the panel wrote the admin's user name and password to the file {file} in its data directory, on its machine (and printed them when it started). Log in with them.").split("{file}");
      hint = h("p", { class: "notice", "data-first-run": "" },
        before,
        h("code", {}, setup.password_file),
        after);
    }
  } catch { /* the hint is optional */ }
  const user = h("input", { name: "username", autocomplete: "username", required: true, autofocus: true });
  const pass = h("input", { name: "password", type: "password", autocomplete: "current-password", required: true });
  const form = h("form", { class: "card login", "aria-label": t("Log in") },
    h("h1", {}, "Switchyard"),
    hint,
    field(t("User name"), user),
    field(t("Password"), pass),
    h("p", { class: "form-error", role: "alert" }),
    h("div", { class: "actions" }, h("button", { class: "primary", type: "submit" }, t("Log in"))));
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    showError(form, null);
    try {
      const s = await call("POST", "/session", { username: user.value, password: pass.value });
      setCsrf(s.csrf_token);
      done(s.admin);
    } catch (err) {
      showError(form, { message: err.status === 401 ? t("Wrong user name or password.") : err.message });
    }
  });
  fill(main, form);
}
