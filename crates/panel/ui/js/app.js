// The shell: session, navigation (`#/…`), and the timers of the page on screen
// (live data is polled; every timer stops when the page changes).

import { h, fill, toast } from "./dom.js";
import { get, del, setCsrf, setOnUnauthorized } from "./api.js";
import { loginPage } from "./login.js";
import { clusterPage, clustersPage } from "./cluster.js";
import { usersPage } from "./users.js";
import { tunnelsPage, tunnelPage } from "./tunnels.js";
import { accountPage } from "./account.js";
import { templatesPage } from "./templates.js";
import { adminsPage } from "./admins.js";
import { auditPage } from "./audit.js";
import { plansPage } from "./plans.js";
import { webhooksPage } from "./webhooks.js";
import { dashboardPage } from "./dashboard.js";
import { LANGS, chooseLanguage, lang, msg, pick, setLanguage, t } from "./i18n.js";

const main = document.getElementById("main");
const nav = document.getElementById("nav");
let timers = [];
let signedIn = false;
/** Who is logged in (`{id, username, role}`). */
let me = null;

/** What a page may use: live refresh that stops when the operator leaves. */
function context() {
  const mine = [];
  timers.push(mine);
  return {
    every(ms, f) {
      const id = setInterval(() => { if (document.visibilityState !== "hidden") f(); }, ms);
      mine.push(id);
    },
  };
}

function stopTimers() {
  for (const list of timers) for (const id of list) clearInterval(id);
  timers = [];
}

const PAGES = [
  [/^#\/clusters\/(\d+)$/, (m, c) => clusterPage(main, Number(m[1]), c)],
  [/^#\/users$/, (_m, c) => usersPage(main, c)],
  [/^#\/tunnels$/, (_m, c) => tunnelsPage(main, c)],
  [/^#\/tunnels\/(\d+)$/, (m, c) => tunnelPage(main, Number(m[1]), c)],
  [/^#\/clusters$/, (_m, c) => clustersPage(main, c)],
  [/^#\/account$/, () => accountPage(main)],
  [/^#\/templates$/, () => templatesPage(main)],
  [/^#\/admins$/, () => adminsPage(main, me)],
  [/^#\/audit$/, () => auditPage(main, me)],
  [/^#\/plans$/, () => plansPage(main)],
  [/^#\/webhooks$/, () => webhooksPage(main)],
];

async function show() {
  stopTimers();
  document.getElementById("toasts").replaceChildren();
  document.querySelector(".menu")?.remove();
  if (!signedIn) return;
  const hash = location.hash || "#/";
  // A reseller's pages are their users and their account (the API refuses the rest).
  if (me && me.role === "reseller" && !/^#\/(users|account)$/.test(hash)) {
    location.replace("#/users");
    return;
  }
  markNav(hash);
  for (const [re, page] of PAGES) {
    const m = hash.match(re);
    if (m) {
      try {
        await page(m, context());
      } catch (e) {
        fill(main, h("p", { class: "notice bad", role: "alert" }, e.message));
      }
      main.focus({ preventScroll: true });
      return;
    }
  }
  // Home: the dashboard.
  try {
    await dashboardPage(main, context());
  } catch (e) {
    fill(main, h("p", { class: "notice bad", role: "alert" }, e.message));
  }
}

function markNav(hash) {
  for (const a of nav.querySelectorAll("a:not(.brand)")) {
    const href = a.getAttribute("href");
    const here = href === "#/" ? hash === "#/" : hash.startsWith(href);
    if (here) a.setAttribute("aria-current", "page"); else a.removeAttribute("aria-current");
  }
}

const ROLES = { owner: msg("owner"), admin: msg("admin"), reseller: msg("reseller"), read_only: msg("read-only") };

/** The sections the admin's role may open (the API enforces it; this only hides). */
function drawNav() {
  const role = me ? me.role : "owner";
  document.body.dataset.role = role;
  const reseller = role === "reseller";
  fill(nav,
    h("a", { href: reseller ? "#/users" : "#/", class: "brand" }, "Switchyard"),
    reseller ? null : h("a", { href: "#/", "data-home": "" }, t("Dashboard")),
    reseller ? null : h("a", { href: "#/clusters" }, t("Clusters")),
    h("a", { href: "#/users" }, t("Users")),
    reseller ? null : h("a", { href: "#/tunnels" }, t("Tunnels")),
    reseller ? null : h("a", { href: "#/plans" }, t("Plans")),
    reseller ? null : h("a", { href: "#/templates" }, t("Templates")),
    role === "owner" ? h("a", { href: "#/admins" }, t("Admins")) : null,
    role === "owner" ? h("a", { href: "#/webhooks" }, t("Webhooks")) : null,
    reseller ? null : h("a", { href: "#/audit" }, t("Audit")),
    h("a", { href: "#/account" }, t("Account")),
    me ? h("span", { class: "who", "data-who": role }, `${me.username} · ${ROLES[role] ? t(ROLES[role]) : role}`) : null,
    languageSwitch(),
    h("button", { type: "button", class: "link", onclick: logout }, t("Log out")));
}

/** The language switch: each language in its own name; the choice stays in this browser. */
export function languageSwitch() {
  const select = h("select", { name: "lang", class: "lang", "aria-label": t("Language"), "data-lang": "",
    onchange: (e) => chooseLanguage(e.target.value) },
  Object.entries(LANGS).map(([code, l]) => h("option", { value: code, lang: code, selected: code === lang() }, l.name)));
  return select;
}

async function logout() {
  try { await del("/session"); } catch { /* gone already */ }
  signOut();
}

function signOut() {
  signedIn = false;
  me = null;
  // The next admin starts from the home page, not from the last one's.
  history.replaceState(null, "", "#/");
  stopTimers();
  setCsrf(null);
  fill(nav, h("span", { class: "brand" }, "Switchyard"), languageSwitch());
  loginPage(main, signIn);
}

function signIn(admin) {
  me = admin || null;
  signedIn = true;
  drawNav();
  show();
}

setOnUnauthorized(() => {
  if (signedIn) {
    toast(t("Your session ended: log in again."), "bad");
    signOut();
  }
});

window.addEventListener("hashchange", show);

(async () => {
  await setLanguage(pick());
  document.title = t("Switchyard panel");
  nav.setAttribute("aria-label", t("Sections"));
  try {
    const setup = await get("/setup");
    if (!setup.logged_in) throw new Error("not logged in");
    const s = await get("/session");
    setCsrf(s.csrf_token);
    signIn(s.admin);
  } catch {
    signOut();
  }
})();
