// A small SVG bar chart: time on x, a value on y, with the largest value and the
// time span written out (so the chart is read, not guessed).

import { h } from "./dom.js";
import { when } from "./format.js";
import { t } from "./i18n.js";

/**
 * `points`: [{at_ms, value}] oldest first; `stepMs`: the width of one bar in time;
 * `format`: value → text. Steps without a point are drawn empty.
 */
export function barChart(points, { stepMs, fromMs, toMs, format, label, sum = true }) {
  const W = 640;
  const H = 160;
  const P = 28;
  const steps = Math.max(1, Math.round((toMs - fromMs) / stepMs));
  const max = Math.max(1, ...points.map((p) => p.value));
  const bw = (W - P * 2) / steps;
  const bars = points.map((p) => {
    const i = Math.floor((p.at_ms - fromMs) / stepMs);
    if (i < 0 || i >= steps) return null;
    const bh = Math.max(1, (p.value / max) * (H - P * 2));
    return h("rect", { x: P + i * bw, y: H - P - bh, width: Math.max(1, bw - 1), height: bh, class: "bar" },
      h("title", {}, t("{time}: {value}", { time: when(p.at_ms), value: String(format(p.value)) })));
  });
  const total = points.reduce((s, p) => s + p.value, 0);
  if (total === 0) return h("p", { class: "muted" }, t("{label}: nothing yet.", { label }));
  const summary = sum
    ? t("{label}: {total} in all", { label, total: String(format(total)) })
    : t("{label}: at most {max}", { label, max: String(format(max)) });
  return h("figure", { class: "chart" },
    h("svg", { viewBox: `0 0 ${W} ${H}`, role: "img", "aria-label": summary },
      h("line", { x1: P, y1: H - P, x2: W - P, y2: H - P, class: "axis" }),
      h("text", { x: P, y: P - 8, class: "axis-label" }, t("max {max}", { max: String(format(max)) })),
      h("text", { x: P, y: H - 8, class: "axis-label" }, when(fromMs)),
      h("text", { x: W - P, y: H - 8, class: "axis-label end" }, t("now")),
      bars),
    h("figcaption", {}, summary));
}
