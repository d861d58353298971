// The UI's languages. English is the source: every message is written once in
// English where it is used, as the argument of t(), and each other language is one file,
// `i18n/<code>.js`, mapping every message to its translation. A message with a
// number in it may be an object of plural forms (`one`, `few`, `many`, `other`, as
// `Intl.PluralRules` names them) chosen by its `n`.
//
// The language is the one chosen with the switch (kept in this browser), else the
// first of the browser's languages the UI has, else English. Numbers, dates and
// sizes follow it (format.js); Persian is laid out right to left.

import EN from "./i18n/en.js";

/** The languages, in the switch's order: their own names and direction. */
export const LANGS = {
  en: { name: "English", dir: "ltr" },
  ru: { name: "Русский", dir: "ltr" },
  fa: { name: "فارسی", dir: "rtl" },
};

const KEY = "switchyard.lang";
let code = "en";
let catalog = EN;
let plurals = new Intl.PluralRules("en");
let numbers = new Intl.NumberFormat("en");

/** The language on screen: "en", "ru" or "fa". */
export function lang() {
  return code;
}

/** The language to start in: the switch's choice, else the browser's, else English. */
export function pick() {
  let saved = null;
  try { saved = localStorage.getItem(KEY); } catch { /* storage off */ }
  if (saved && LANGS[saved]) return saved;
  for (const tag of navigator.languages || [navigator.language]) {
    const primary = String(tag || "").toLowerCase().split("-")[0];
    if (LANGS[primary]) return primary;
  }
  return "en";
}

/** Loads a language and lays the page out for it. */
export async function setLanguage(next) {
  if (!LANGS[next]) next = "en";
  catalog = next === "en" ? EN : (await import(`./i18n/${next}.js`)).default;
  code = next;
  plurals = new Intl.PluralRules(next);
  numbers = new Intl.NumberFormat(next);
  document.documentElement.lang = next;
  document.documentElement.dir = LANGS[next].dir;
}

/** The switch: remembers the choice in this browser and draws the page again. */
export function chooseLanguage(next) {
  try { localStorage.setItem(KEY, next); } catch { /* storage off */ }
  location.reload();
}

/** Marks a message written where t() cannot see it (a table of messages chosen
 * later); t() translates what it returns. */
export function msg(text) {
  return text;
}

/**
 * A message in the language on screen. `{name}` in it is replaced by `params.name`;
 * a number is written in the language's digits and grouping (pass an id, a port or
 * an address as a string to keep it as it is). A message of plural forms picks the
 * form for `params.n`.
 */
export function t(msg, params) {
  let text = catalog[msg] ?? EN[msg] ?? msg;
  if (typeof text === "object") {
    const n = Number(params?.n ?? 0);
    const forms = text;
    text = forms[plurals.select(n)] ?? forms.other;
  }
  if (!params) return text;
  return text.replace(/\{(\w+)\}/g, (all, name) => {
    if (!(name in params)) return all;
    const v = params[name];
    return typeof v === "number" ? numbers.format(v) : String(v ?? "");
  });
}
