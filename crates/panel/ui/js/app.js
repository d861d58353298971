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

const main = document.getElementById("main");
const nav = document.getElementById("nav");
let timers = [];
let signedIn = false;

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
];

async function show() {
  stopTimers();
  document.getElementById("toasts").replaceChildren();
  document.querySelector(".menu")?.remove();
  if (!signedIn) return;
  const hash = location.hash || "#/";
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
  // Home: the first cluster, or the list that offers to make one.
  const clusters = await get("/clusters");
  location.replace(clusters.length ? `#/clusters/${clusters[0].id}` : "#/clusters");
}

function markNav(hash) {
  for (const a of nav.querySelectorAll("a:not(.brand)")) {
    const here = hash.startsWith(a.getAttribute("href"));
    if (here) a.setAttribute("aria-current", "page"); else a.removeAttribute("aria-current");
  }
}

function drawNav() {
  fill(nav,
    h("a", { href: "#/clusters", class: "brand" }, "Switchyard"),
    h("a", { href: "#/clusters" }, "Clusters"),
    h("a", { href: "#/users" }, "Users"),
    h("a", { href: "#/tunnels" }, "Tunnels"),
    h("a", { href: "#/templates" }, "Templates"),
    h("a", { href: "#/account" }, "Account"),
    h("button", { type: "button", class: "link", onclick: logout }, "Log out"));
}

async function logout() {
  try { await del("/session"); } catch { /* gone already */ }
  signOut();
}

function signOut() {
  signedIn = false;
  stopTimers();
  setCsrf(null);
  fill(nav);
  loginPage(main, signIn);
}

function signIn() {
  signedIn = true;
  drawNav();
  show();
}

setOnUnauthorized(() => {
  if (signedIn) {
    toast("Your session ended: log in again.", "bad");
    signOut();
  }
});

window.addEventListener("hashchange", show);

(async () => {
  try {
    const setup = await get("/setup");
    if (!setup.logged_in) throw new Error("not logged in");
    const s = await get("/session");
    setCsrf(s.csrf_token);
    signIn();
  } catch {
    signOut();
  }
})();
