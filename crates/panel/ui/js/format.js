// Numbers, sizes and times as an operator reads them, in the language on screen
// (its digits, grouping, decimal sign, units and calendar).

import { lang, msg, t } from "./i18n.js";

/** 1234.5 → "1,234.5" (en), "1 234,5" (ru), "۱٬۲۳۴٫۵" (fa). */
export function num(n, digits) {
  if (n === null || n === undefined) return "—";
  const opts = digits === undefined ? {} : { minimumFractionDigits: digits, maximumFractionDigits: digits };
  return new Intl.NumberFormat(lang(), opts).format(Number(n));
}

/** A share of 100: 42 → "42%" in the language's way. */
export function percent(p) {
  if (p === null || p === undefined) return "—";
  return new Intl.NumberFormat(lang(), { style: "percent", maximumFractionDigits: 0 }).format(Number(p) / 100);
}

const UNITS = [msg("{n} B"), msg("{n} KiB"), msg("{n} MiB"), msg("{n} GiB"), msg("{n} TiB"), msg("{n} PiB")];

/** 1536 → "1.5 KiB". */
export function bytes(n) {
  if (n === null || n === undefined) return "—";
  let i = 0;
  let v = Number(n);
  while (v >= 1024 && i < UNITS.length - 1) { v /= 1024; i++; }
  return t(UNITS[i], { n: num(v, i === 0 ? 0 : (v < 10 ? 1 : 0)) });
}

const RATES = [msg("{v} bit/s"), msg("{v} kbit/s"), msg("{v} Mbit/s"), msg("{v} Gbit/s"), msg("{v} Tbit/s")];

/** Bytes per second as bits per second: 125000 → "1.0 Mbit/s". */
export function rate(bytesPerS) {
  if (bytesPerS === null || bytesPerS === undefined) return "—";
  let i = 0;
  let v = Number(bytesPerS) * 8;
  while (v >= 1000 && i < RATES.length - 1) { v /= 1000; i++; }
  return t(RATES[i], { v: num(v, i === 0 ? 0 : 1) });
}

/** Unix ms → local date and time, or "—". */
export function when(ms) {
  if (!ms) return "—";
  return new Date(ms).toLocaleString(lang());
}

/** Unix ms → local date, or "—". */
export function day(ms) {
  if (!ms) return "—";
  return new Date(ms).toLocaleDateString(lang());
}

/** Milliseconds → "3 s", "2 min", "5 h", "4 d". */
export function duration(ms) {
  if (ms === null || ms === undefined) return "—";
  const s = Math.round(ms / 1000);
  if (s < 60) return t("{n} s", { n: s });
  if (s < 3600) return t("{n} min", { n: Math.round(s / 60) });
  if (s < 86400) return t("{n} h", { n: Math.round(s / 3600) });
  return t("{n} d", { n: Math.round(s / 86400) });
}
