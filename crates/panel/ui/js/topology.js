// The cluster's live topology: servers with their inbounds on the left, route boxes
// in the middle, the distribution point (users' apps) on the right. Each inbound is
// joined to its route; each non-empty route has a pipe to the distribution point; an
// empty route is dashed and has none.
//
// Moving an inbound: drag it (pointer events, so mouse, pen and touch alike) onto a
// route or onto "Not attached", or press it (Enter, Space, a click) for a menu that
// does the same from the keyboard. Route boxes reorder with their drag handle or
// their arrows.

import { h, fill } from "./dom.js";
import { rate } from "./format.js";
import { t, msg } from "./i18n.js";

const DRAG_START_PX = 5;

/** Draws `data` into `root`; `on` holds the actions. Returns a redraw of the pipes. */
export function drawTopology(root, data, on) {
  const { servers, inbounds, routes, warning } = data;
  const routeOf = new Map();
  for (const r of routes) for (const id of r.inbound_ids) routeOf.set(id, r);
  const byServer = new Map(servers.map((s) => [s.id, []]));
  for (const i of inbounds) (byServer.get(i.server_id) || []).push(i);

  const left = h("div", { class: "topo-servers", "aria-label": t("Servers and their inbounds") },
    servers.length ? servers.map((s) => serverCard(s, byServer.get(s.id) || [], routeOf, routes, on))
      : h("p", { class: "muted" }, t("No server yet: add one above.")));
  const middle = h("ol", { class: "topo-routes", "aria-label": t("Routes, in the order users' apps list them") },
    routes.map((r, n) => routeBox(r, n, routes, inbounds, on)),
    h("li", { class: "route-box unattached", "data-drop-route": "none", "aria-label": t("Not attached") },
      h("div", { class: "route-head" }, h("strong", {}, t("Not attached"))),
      h("small", { class: "muted" }, t("Drop an inbound here to take it out of every route."))));
  const hub = h("div", { class: "topo-hub" },
    h("div", { class: "hub", id: "hub" }, h("strong", {}, t("Users' apps")),
      h("small", {}, t("{n} entries", { n: routes.filter((r) => r.inbound_ids.length).length }))));
  const svg = h("svg", { class: "topo-lines", "aria-hidden": "true" });
  const stage = h("div", { class: "topology" }, svg, left, middle, hub);
  fill(root,
    warning ? h("p", { class: "notice warn", role: "status", "data-warning": "" }, "⚠ ", warning) : null,
    stage);

  const redraw = () => drawLines(stage, svg, routes, routeOf);
  requestAnimationFrame(redraw);
  const ro = new ResizeObserver(redraw);
  ro.observe(stage);
  return { redraw, stop: () => ro.disconnect() };
}

function serverCard(s, inbounds, routeOf, routes, on) {
  return h("section", { class: "server-card", "data-server": s.id, "aria-label": t("Server {name}", { name: s.name }) },
    h("div", { class: "server-head" },
      h("strong", {}, s.name),
      stateBadge(s.state),
      h("small", { class: "muted" }, t("{n} online · ↑ {up} ↓ {down}", { n: s.users_online, up: rate(s.up_bytes_per_s), down: rate(s.down_bytes_per_s) }))),
    h("ul", { class: "inbounds" },
      inbounds.length ? inbounds.map((i) => h("li", {}, inboundChip(i, routeOf.get(i.id), routes, on)))
        : h("li", { class: "muted" }, t("No inbound"))));
}

/** A server's state in words, with a colour that only repeats them. */
const STATES = { pending: msg("Pending"), online: msg("Online"), unavailable: msg("Unavailable") };

export function stateBadge(state) {
  return h("span", { class: `badge state-${state}` }, STATES[state] ? t(STATES[state]) : state);
}

function inboundChip(i, route, routes, on) {
  const label = route
    ? t("{inbound} ({protocol} :{port}), in route {route}", { inbound: i.name, protocol: i.protocol, port: String(i.port), route: route.name })
    : t("{inbound} ({protocol} :{port}), not attached", { inbound: i.name, protocol: i.protocol, port: String(i.port) });
  const chip = h("button", {
    type: "button", class: `inbound-chip${route ? "" : " loose"}`, "data-inbound": i.id,
    "aria-haspopup": "menu", "aria-label": label, title: label,
  },
  h("span", { class: "chip-name" }, i.name),
  h("small", {}, `${i.protocol} :${i.port}${i.coefficient !== 1 ? ` ×${i.coefficient}` : ""}`),
  h("small", { class: "chip-route" }, route ? `→ ${route.name}` : t("not attached")));
  let drag = null;
  chip.addEventListener("pointerdown", (e) => {
    if (e.button !== 0) return;
    drag = { x: e.clientX, y: e.clientY, ghost: null, over: null };
    chip.setPointerCapture(e.pointerId);
  });
  chip.addEventListener("pointermove", (e) => {
    if (!drag) return;
    if (!drag.ghost) {
      if (Math.hypot(e.clientX - drag.x, e.clientY - drag.y) < DRAG_START_PX) return;
      drag.ghost = h("div", { class: "drag-ghost", "aria-hidden": "true" }, i.name);
      document.body.append(drag.ghost);
      document.body.classList.add("dragging");
    }
    drag.ghost.style.left = `${e.clientX + 8}px`;
    drag.ghost.style.top = `${e.clientY + 8}px`;
    const over = dropTarget(e.clientX, e.clientY);
    if (over !== drag.over) {
      drag.over?.classList.remove("drop-here");
      over?.classList.add("drop-here");
      drag.over = over;
    }
  });
  const end = (e, cancelled) => {
    if (!drag) return;
    const d = drag;
    drag = null;
    if (!d.ghost) return; // a click: the menu opens on "click"
    d.ghost.remove();
    document.body.classList.remove("dragging");
    d.over?.classList.remove("drop-here");
    chip.dataset.dragged = "1";
    setTimeout(() => delete chip.dataset.dragged, 0);
    const target = cancelled ? null : dropTarget(e.clientX, e.clientY);
    if (!target) return;
    const to = target.dataset.dropRoute === "none" ? null : Number(target.dataset.dropRoute);
    if (to !== (route ? route.id : null)) on.attach(i, to);
  };
  chip.addEventListener("pointerup", (e) => end(e, false));
  chip.addEventListener("pointercancel", (e) => end(e, true));
  chip.addEventListener("click", () => {
    if (chip.dataset.dragged) return;
    inboundMenu(chip, i, route, routes, on);
  });
  return chip;
}

function dropTarget(x, y) {
  const el = document.elementFromPoint(x, y);
  return el ? el.closest("[data-drop-route]") : null;
}

/** The keyboard's way to do what a drag does, and more. */
function inboundMenu(anchor, i, route, routes, on) {
  document.querySelector(".menu")?.remove();
  const close = () => { menu.remove(); anchor.focus(); };
  const item = (text, f, attrs = {}) => h("button", {
    type: "button", role: "menuitem", ...attrs,
    onclick: () => { menu.remove(); f(); },
  }, text);
  const menu = h("div", { class: "menu", role: "menu", "aria-label": t("Inbound {name}", { name: i.name }) },
    h("div", { class: "menu-title" }, t("Move {name} to", { name: i.name })),
    routes.filter((r) => !route || r.id !== route.id)
      .map((r) => item(`${r.flag ? `${r.flag} ` : ""}${r.name}`, () => on.attach(i, r.id), { "data-move-to": r.id })),
    route ? item(t("Not attached"), () => on.attach(i, null), { "data-move-to": "none" }) : null,
    h("hr"),
    item(t("Edit inbound…"), () => on.editInbound(i)),
    item(t("Delete inbound…"), () => on.deleteInbound(i)));
  menu.addEventListener("keydown", (e) => {
    const items = [...menu.querySelectorAll("[role=menuitem]")];
    const at = items.indexOf(document.activeElement);
    if (e.key === "Escape") { e.preventDefault(); close(); }
    if (e.key === "ArrowDown") { e.preventDefault(); items[(at + 1) % items.length].focus(); }
    if (e.key === "ArrowUp") { e.preventDefault(); items[(at - 1 + items.length) % items.length].focus(); }
  });
  const r = anchor.getBoundingClientRect();
  menu.style.left = `${Math.min(r.left + window.scrollX, window.scrollX + document.documentElement.clientWidth - 260)}px`;
  menu.style.top = `${r.bottom + window.scrollY + 4}px`;
  document.body.append(menu);
  // Right to left, the menu hangs from the chip's right edge instead (page coordinates
  // are physical: left is left in either direction).
  if (getComputedStyle(anchor).direction === "rtl") {
    menu.style.left = `${Math.max(window.scrollX, r.right + window.scrollX - menu.offsetWidth)}px`;
  }
  menu.querySelector("[role=menuitem]")?.focus();
  setTimeout(() => document.addEventListener("pointerdown", function away(e) {
    if (!menu.contains(e.target)) { menu.remove(); document.removeEventListener("pointerdown", away); }
  }), 0);
}

function routeBox(r, n, routes, inbounds, on) {
  const empty = r.inbound_ids.length === 0;
  const names = r.inbound_ids.map((id) => inbounds.find((i) => i.id === id)?.name).filter(Boolean);
  const algorithm = r.algorithm === "round_robin" ? t("Round-robin") : t("Least loaded by traffic");
  const handle = h("button", {
    type: "button", class: "handle", "aria-label": t("Reorder {name}: drag, or use the arrows", { name: r.name }),
    title: t("Drag to reorder"),
  }, "⠿");
  const box = h("li", {
    class: `route-box${empty ? " empty" : ""}`, "data-route": r.id, "data-drop-route": r.id,
    "aria-label": empty ? t("Route {name}, empty: users don't see it", { name: r.name }) : t("Route {name}", { name: r.name }),
  },
  h("div", { class: "route-head" },
    handle,
    h("strong", { class: "route-name" }, r.flag ? `${r.flag} ` : "", r.name),
    r.is_default ? h("small", { class: "tag" }, t("default")) : null),
  h("small", { class: "muted" }, empty ? t("{algorithm} · empty: users don't see it", { algorithm })
    : t("{algorithm} · {n} inbound(s): {names}", { algorithm, n: names.length, names: names.join(", ") })),
  h("div", { class: "route-actions" },
    h("button", { type: "button", "aria-label": t("Move {name} up", { name: r.name }), disabled: n === 0, onclick: () => on.move(r, "up") }, "↑"),
    h("button", { type: "button", "aria-label": t("Move {name} down", { name: r.name }), disabled: n === routes.length - 1, onclick: () => on.move(r, "down") }, "↓"),
    h("button", { type: "button", onclick: () => on.editRoute(r) }, t("Edit")),
    h("button", { type: "button", class: "danger-text", onclick: () => on.deleteRoute(r) }, t("Delete"))));
  // Reordering by the handle: drop on another box to take its place.
  let drag = null;
  handle.addEventListener("pointerdown", (e) => {
    if (e.button !== 0) return;
    drag = { x: e.clientX, y: e.clientY, moved: false };
    handle.setPointerCapture(e.pointerId);
  });
  handle.addEventListener("pointermove", (e) => {
    if (!drag) return;
    if (!drag.moved && Math.hypot(e.clientX - drag.x, e.clientY - drag.y) < DRAG_START_PX) return;
    drag.moved = true;
    box.classList.add("lifted");
    for (const b of document.querySelectorAll(".route-box.drop-here")) b.classList.remove("drop-here");
    routeUnder(e.clientX, e.clientY)?.classList.add("drop-here");
  });
  handle.addEventListener("pointerup", (e) => {
    if (!drag) return;
    const moved = drag.moved;
    drag = null;
    box.classList.remove("lifted");
    for (const b of document.querySelectorAll(".route-box.drop-here")) b.classList.remove("drop-here");
    if (!moved) return;
    const target = routeUnder(e.clientX, e.clientY);
    if (!target || target === box) return;
    const ids = routes.map((x) => x.id).filter((id) => id !== r.id);
    const at = ids.indexOf(Number(target.dataset.route));
    const from = routes.findIndex((x) => x.id === r.id);
    const to = routes.findIndex((x) => x.id === Number(target.dataset.route));
    ids.splice(from < to ? at + 1 : at, 0, r.id);
    on.order(ids);
  });
  handle.addEventListener("keydown", (e) => {
    if (e.key === "ArrowUp" && n > 0) { e.preventDefault(); on.move(r, "up"); }
    if (e.key === "ArrowDown" && n < routes.length - 1) { e.preventDefault(); on.move(r, "down"); }
  });
  return box;
}

function routeUnder(x, y) {
  const el = document.elementFromPoint(x, y);
  return el ? el.closest(".route-box[data-route]") : null;
}

function drawLines(stage, svg, routes, routeOf) {
  const base = stage.getBoundingClientRect();
  // Right to left, the columns are mirrored: a line leaves a box at its left edge and
  // enters the next column at its right edge.
  const rtl = getComputedStyle(stage).direction === "rtl";
  const from = (b) => (rtl ? b.left : b.right) - base.left;
  const to = (b) => (rtl ? b.right : b.left) - base.left;
  svg.setAttribute("width", base.width);
  svg.setAttribute("height", base.height);
  const lines = [];
  const hub = stage.querySelector("#hub");
  const hubBox = hub && hub.getBoundingClientRect();
  for (const chip of stage.querySelectorAll(".inbound-chip[data-inbound]")) {
    const route = routeOf.get(Number(chip.dataset.inbound));
    if (!route) continue;
    const box = stage.querySelector(`.route-box[data-route="${route.id}"]`);
    if (!box) continue;
    const a = chip.getBoundingClientRect();
    const b = box.getBoundingClientRect();
    lines.push(curve(from(a), a.top + a.height / 2 - base.top,
      to(b), b.top + b.height / 2 - base.top, "member", { "data-member": `${chip.dataset.inbound}-${route.id}` }, rtl));
  }
  for (const r of routes) {
    if (!r.inbound_ids.length || !hubBox) continue;
    const box = stage.querySelector(`.route-box[data-route="${r.id}"]`);
    if (!box) continue;
    const b = box.getBoundingClientRect();
    lines.push(curve(from(b), b.top + b.height / 2 - base.top,
      to(hubBox), hubBox.top + hubBox.height / 2 - base.top, "pipe", { "data-pipe": r.id }, rtl));
  }
  fill(svg, lines);
}

function curve(x1, y1, x2, y2, kind, attrs, rtl) {
  // The bend follows the way the line runs: rightwards, or leftwards right to left.
  const sign = rtl ? -1 : 1;
  const dx = sign * Math.max(24, (sign * (x2 - x1)) / 2);
  return h("path", {
    class: kind, ...attrs,
    d: `M${x1} ${y1} C${x1 + dx} ${y1} ${x2 - dx} ${y2} ${x2} ${y2}`,
  });
}
