// Numbers and times as an operator reads them.

const UNITS = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];

/** 1536 → "1.5 KiB". */
export function bytes(n) {
  if (n === null || n === undefined) return "—";
  let i = 0;
  let v = Number(n);
  while (v >= 1024 && i < UNITS.length - 1) { v /= 1024; i++; }
  return `${i === 0 ? v : v.toFixed(v < 10 ? 1 : 0)} ${UNITS[i]}`;
}

/** Bytes per second as bits per second: 125000 → "1.0 Mbit/s". */
export function rate(bytesPerS) {
  if (bytesPerS === null || bytesPerS === undefined) return "—";
  const bits = Number(bytesPerS) * 8;
  const units = ["bit/s", "kbit/s", "Mbit/s", "Gbit/s", "Tbit/s"];
  let i = 0;
  let v = bits;
  while (v >= 1000 && i < units.length - 1) { v /= 1000; i++; }
  return `${v.toFixed(i === 0 ? 0 : 1)} ${units[i]}`;
}

/** Unix ms → local date and time, or "—". */
export function when(ms) {
  if (!ms) return "—";
  return new Date(ms).toLocaleString();
}

/** Milliseconds → "3 s", "2 min", "5 h". */
export function duration(ms) {
  if (ms === null || ms === undefined) return "—";
  const s = Math.round(ms / 1000);
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.round(s / 60)} min`;
  if (s < 86400) return `${Math.round(s / 3600)} h`;
  return `${Math.round(s / 86400)} d`;
}
