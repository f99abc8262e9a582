// Charts drawn as SVG by hand: a line chart over time and bar charts. Each has a <title> and
// a text summary for screen readers.

import { s } from "./dom.js";
import { decimal } from "./format.js";

function niceMax(value) {
  if (value <= 0) return 1;
  const power = 10 ** Math.floor(Math.log10(value));
  for (const step of [1, 2, 2.5, 5, 10]) {
    if (value <= step * power) return step * power;
  }
  return 10 * power;
}

function fmtTick(value) {
  if (value >= 100 || Number.isInteger(value)) return decimal(Math.round(value), 0);
  return decimal(value, value >= 10 ? 1 : 2);
}

/** How many x labels fit: each needs its text's width (about 6.5 px a character at 11 px)
 * and a gap; long labels (dates with times) get fewer ticks rather than overlapping. */
function xTickCount(labelOf, x0, x1, room) {
  for (const count of [4, 3, 2, 1]) {
    const widest = Math.max(...Array.from({ length: count + 1 }, (_, i) => labelOf(x0 + ((x1 - x0) * i) / count).length));
    if (room / count >= widest * 6.5 + 16) return count;
  }
  return 1;
}

/**
 * A line chart of `points` ([{x, y}], x ascending) from `x0` to `x1`.
 * `xLabel(x)` formats the x ticks.
 */
export function lineChart(points, { x0, x1, title, xLabel, width = 640, height = 220 }) {
  const pad = { left: 44, right: 12, top: 12, bottom: 26 };
  const w = width - pad.left - pad.right;
  const h = height - pad.top - pad.bottom;
  const top = niceMax(Math.max(0, ...points.map((p) => p.y)));
  const span = Math.max(1e-9, x1 - x0);
  const px = (x) => pad.left + ((x - x0) / span) * w;
  const py = (y) => pad.top + h - (y / top) * h;
  const svg = s("svg", {
    class: "chart", viewBox: `0 0 ${width} ${height}`, role: "img", "aria-label": title,
  }, s("title", {}, title));
  for (let i = 0; i <= 4; i += 1) {
    const y = (top * i) / 4;
    svg.append(
      s("line", { class: "axis", x1: pad.left, x2: width - pad.right, y1: py(y), y2: py(y) }),
      s("text", { x: pad.left - 6, y: py(y) + 4, "text-anchor": "end" }, fmtTick(y)),
    );
  }
  const ticks = xTickCount(xLabel, x0, x1, w);
  for (let i = 0; i <= ticks; i += 1) {
    const x = x0 + (span * i) / ticks;
    const anchor = i === 0 ? "start" : i === ticks ? "end" : "middle";
    svg.append(s("text", { x: px(x), y: height - 6, "text-anchor": anchor }, xLabel(x)));
  }
  if (points.length) {
    const line = points.map((p, i) => `${i ? "L" : "M"}${px(p.x).toFixed(1)},${py(p.y).toFixed(1)}`).join("");
    const last = points[points.length - 1];
    const area = `${line}L${px(last.x).toFixed(1)},${py(0)}L${px(points[0].x).toFixed(1)},${py(0)}Z`;
    svg.append(s("path", { class: "area", d: area }), s("path", { class: "line", d: line }));
  }
  return svg;
}

/** Horizontal bars: [{label, value, tone}] with the value printed at the end of each bar. */
export function barChart(items, { title, width = 640, barHeight = 22, format = String }) {
  const labelWidth = 90;
  const height = Math.max(1, items.length) * (barHeight + 6) + 6;
  const top = Math.max(1, ...items.map((i) => i.value));
  const room = width - labelWidth - 70;
  const svg = s("svg", {
    class: "chart", viewBox: `0 0 ${width} ${height}`, role: "img", "aria-label": title,
  }, s("title", {}, title));
  items.forEach((item, i) => {
    const y = 6 + i * (barHeight + 6);
    const length = Math.max(2, (item.value / top) * room);
    svg.append(
      s("text", { x: labelWidth - 8, y: y + barHeight * 0.7, "text-anchor": "end" }, item.label),
      s("rect", { class: `bar ${item.tone || ""}`, x: labelWidth, y, width: length, height: barHeight, rx: 3 }),
      s("text", { x: labelWidth + length + 6, y: y + barHeight * 0.7 }, format(item.value)),
    );
  });
  return svg;
}

/** Vertical columns over time: [{x, value}] from x0 to x1 in steps of `step`. */
export function columnChart(items, { x0, x1, step, title, xLabel, width = 640, height = 200, mark }) {
  const pad = { left: 36, right: 8, top: 10, bottom: 26 };
  const w = width - pad.left - pad.right;
  const h = height - pad.top - pad.bottom;
  const slots = Math.max(1, Math.round((x1 - x0) / step));
  const top = niceMax(Math.max(1, ...items.map((i) => i.value)));
  const bw = w / slots;
  const svg = s("svg", {
    class: "chart", viewBox: `0 0 ${width} ${height}`, role: "img", "aria-label": title,
  }, s("title", {}, title));
  for (let i = 0; i <= 2; i += 1) {
    const v = (top * i) / 2;
    const y = pad.top + h - (v / top) * h;
    svg.append(
      s("line", { class: "axis", x1: pad.left, x2: width - pad.right, y1: y, y2: y }),
      s("text", { x: pad.left - 5, y: y + 4, "text-anchor": "end" }, fmtTick(v)),
    );
  }
  for (const item of items) {
    const index = Math.floor((item.x - x0) / step);
    if (index < 0 || index >= slots) continue;
    const bh = (item.value / top) * h;
    svg.append(s("rect", {
      class: `bar ${mark && item.value >= mark ? "warn" : ""}`,
      x: pad.left + index * bw + 0.5, y: pad.top + h - bh, width: Math.max(1, bw - 1), height: bh,
    }, s("title", {}, `${xLabel(item.x)}: ${item.value}`)));
  }
  for (let i = 0; i <= 4; i += 1) {
    svg.append(s("text", {
      x: pad.left + (w * i) / 4, y: height - 6, "text-anchor": i === 0 ? "start" : i === 4 ? "end" : "middle",
    }, xLabel(x0 + ((x1 - x0) * i) / 4)));
  }
  return svg;
}

/** A small trend line of recent values. */
export function sparkline(values, { title, width = 120, height = 28 }) {
  const svg = s("svg", { class: "chart spark", viewBox: `0 0 ${width} ${height}`, role: "img", "aria-label": title });
  if (values.length < 2) return svg;
  const lo = Math.min(...values);
  const hi = Math.max(...values);
  const range = hi - lo || 1;
  const d = values
    .map((v, i) => `${i ? "L" : "M"}${((i / (values.length - 1)) * (width - 2) + 1).toFixed(1)},${(height - 2 - ((v - lo) / range) * (height - 4)).toFixed(1)}`)
    .join("");
  svg.append(s("path", { class: "line", d }));
  return svg;
}
