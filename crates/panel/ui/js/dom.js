// Building the page. Every value goes in as text (textContent, attribute values set
// with setAttribute), never as HTML: a user named `<img src=x onerror=alert(1)>`
// shows as those characters.

import { t } from "./i18n.js";

/** An element: `h("button", {class: "primary", onclick: f}, "Save")`. */
export function h(tag, attrs = {}, ...children) {
  const ns = SVG_TAGS.has(tag) ? "http://www.w3.org/2000/svg" : null;
  const el = ns ? document.createElementNS(ns, tag) : document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k.startsWith("on") && typeof v === "function") {
      el.addEventListener(k.slice(2), v);
    } else if (k === "dataset") {
      Object.assign(el.dataset, v);
    } else if (v === true) {
      el.setAttribute(k, "");
    } else {
      el.setAttribute(k, String(v));
    }
  }
  append(el, children);
  return el;
}

const SVG_TAGS = new Set(["svg", "path", "line", "polyline", "circle", "rect", "text", "g", "title"]);

function append(el, children) {
  for (const c of children.flat(Infinity)) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
}

/** Replaces the children of `el`. */
export function fill(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

/** A labelled form field; `control` is an input, select or textarea with a `name`. */
export function field(label, control, hint) {
  const id = control.id || `f-${control.getAttribute("name")}-${++ids}`;
  control.id = id;
  return h("div", { class: "field", "data-field": control.getAttribute("name") },
    h("label", { for: id }, label),
    control,
    hint ? h("small", { class: "hint" }, hint) : null,
    h("small", { class: "error", role: "alert" }));
}
let ids = 0;

/** Shows an API error: next to the field it names when the form has it, else on top. */
export function showError(form, err) {
  for (const e of form.querySelectorAll(".field .error")) e.textContent = "";
  for (const e of form.querySelectorAll(".invalid")) e.classList.remove("invalid");
  const top = form.querySelector(".form-error");
  if (top) top.textContent = "";
  if (!err) return;
  const name = err.field ? err.field.replace(/\[\d+\].*$/, "") : null;
  const box = name && (form.querySelector(`[data-field="${CSS.escape(err.field)}"]`) ||
    form.querySelector(`[data-field="${CSS.escape(name)}"]`));
  if (box) {
    box.closest("details")?.setAttribute("open", "");
    box.querySelector(".error").textContent = err.field === name ? err.message : `${err.field}: ${err.message}`;
    box.classList.add("invalid");
    box.querySelector("input,select,textarea")?.focus();
  } else if (top) {
    top.textContent = err.field ? `${err.field}: ${err.message}` : err.message;
  } else {
    toast(err.message, "bad");
  }
}

/** A modal dialog; resolves when it closes. `build(close)` returns its body. */
export function dialog(title, build) {
  return new Promise((resolve) => {
    const d = h("dialog", { class: "dialog", "aria-label": title });
    const close = (value) => { d.close(); d.remove(); resolve(value); };
    d.append(h("h2", {}, title), build(close));
    d.addEventListener("cancel", (e) => { e.preventDefault(); close(undefined); });
    document.body.append(d);
    d.showModal();
    d.querySelector("[autofocus], input, select, button")?.focus();
  });
}

/** Asks before something destructive; `what` says what will happen. */
export function confirmAction(title, what, verb = t("Confirm")) {
  return dialog(title, (close) => h("div", {},
    h("p", {}, what),
    h("div", { class: "actions" },
      h("button", { type: "button", onclick: () => close(false) }, t("Cancel")),
      h("button", { type: "button", class: "danger", "data-confirm": "", onclick: () => close(true) }, verb))));
}

/** A short message at the bottom of the screen, read out by screen readers. */
export function toast(message, kind = "ok") {
  const box = document.getElementById("toasts");
  const t = h("div", { class: `toast ${kind}`, role: kind === "bad" ? "alert" : "status" }, message);
  box.append(t);
  setTimeout(() => t.remove(), 4000);
}

/** Copies `text` and says so. */
export async function copy(text, what = t("Copied")) {
  try {
    await navigator.clipboard.writeText(text);
    toast(what);
  } catch {
    toast(t("Copy failed: select the text and copy it by hand"), "bad");
  }
}
