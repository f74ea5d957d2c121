/* Small hand-written SVG charts for the admin pages (no chart library). Each chart is an
   <svg role="img"> with a text summary, followed by a <details> table of its data. */

const NS = "http://www.w3.org/2000/svg";

function svg(tag, attributes = {}, children = []) {
  const node = document.createElementNS(NS, tag);
  for (const [key, value] of Object.entries(attributes)) node.setAttribute(key, String(value));
  node.append(...children);
  return node;
}

function html(tag, attributes = {}, children = []) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attributes)) {
    if (key === "text") node.textContent = value;
    else node.setAttribute(key, value);
  }
  node.append(...children);
  return node;
}

/* 0 and a few round steps up to at least `max` (1, 2, 5 × 10^k). */
export function niceTicks(max, count = 4) {
  if (!(max > 0)) return [0, 1];
  const rough = max / count;
  const power = 10 ** Math.floor(Math.log10(rough));
  const step = [1, 2, 5, 10].map((m) => m * power).find((s) => s >= rough);
  const ticks = [];
  for (let v = 0; v < max + step; v += step) ticks.push(v);
  return ticks;
}

function dataTable(caption, headers, rows) {
  return html("details", { class: "chart-data" }, [
    html("summary", { text: `${caption}: the numbers` }),
    html("table", {}, [
      html("thead", {}, [html("tr", {}, headers.map((h) => html("th", { scope: "col", text: h })))]),
      html("tbody", {}, rows.map((row) => html("tr", {}, row.map((cell, i) => html("td", { class: i ? "num" : "", text: String(cell) }))))),
    ]),
  ]);
}

const SIZE = { width: 640, height: 220, left: 46, right: 14, top: 12, bottom: 30 };

/* Drawn in the container's own pixels (at least 280, at most `most`), and shown at exactly that
   width (admin.css), never scaled: the text stays at the page's 12 px on a phone and on a wide
   screen alike, instead of shrinking to 8 px in a narrower box. */
function widthOf(container, most = Infinity) {
  return Math.min(most, Math.max(280, Math.round(container.clientWidth || SIZE.width)));
}

const FONT = "12px system-ui, sans-serif";
let measuring = null;

/* A text's width in the charts' font, in pixels. */
function textWidth(text) {
  measuring ||= document.createElement("canvas").getContext("2d");
  measuring.font = FONT;
  return measuring.measureText(text).width;
}

/* The text cut to `room` pixels with an ellipsis (the whole text stays in the bar's tooltip and
   in the table of numbers). */
function fitted(text, room) {
  if (textWidth(text) <= room) return text;
  let cut = text;
  while (cut.length > 1 && textWidth(`${cut}…`) > room) cut = cut.slice(0, -1);
  return `${cut}…`;
}

/* A chart with nothing to draw says so, with no axis of 0 and 1 beside nothing (its table of
   numbers stays, as every chart's). */
function emptyChart(container, title, width, table) {
  const text = `${title}: no labels in this window yet.`;
  const chart = svg("svg", { viewBox: `0 0 ${width} 40`, width, role: "img", "aria-label": text, class: "chart empty" },
    [svg("text", { x: 0, y: 24 }, ["No labels in this window yet."])]);
  container.replaceChildren(chart, table);
}

/* Hours before a campaign's first label are left out (keeping at least `minimum` hours), so a new
   campaign fills the chart instead of the last pixels of a 48-hour window. `before` counts the
   labels older than the window: with any, the whole window is shown. */
export function fromFirstLabel(series, before, minimum = 6) {
  if (before > 0) return series;
  const first = series.findIndex((p) => p.value > 0);
  if (first < 0) return series;
  return series.slice(Math.max(0, Math.min(first, series.length - minimum)));
}

function frame(ticks, yOf, width) {
  return ticks.map((tick) => svg("g", { class: "tick" }, [
    svg("line", { x1: SIZE.left, x2: width - SIZE.right, y1: yOf(tick), y2: yOf(tick) }),
    svg("text", { x: SIZE.left - 6, y: yOf(tick) + 4, "text-anchor": "end" }, [tick.toLocaleString()]),
  ]));
}

function hourLabel(date, withDay) {
  const hh = `${String(date.getHours()).padStart(2, "0")}:00`;
  return withDay ? `${date.toLocaleDateString(undefined, { month: "short", day: "numeric" })} ${hh}` : hh;
}

/* Points {time: Date, value} at hourly steps, as columns (kind "columns") or a filled line (kind "area"). */
export function timeChart(container, points, { title, unit, kind = "columns" }) {
  const width = widthOf(container);
  const max = Math.max(0, ...points.map((p) => p.value));
  const table = dataTable(title, ["Hour", unit], points.map((p) => [hourLabel(p.time, true), p.value.toLocaleString()]));
  if (max === 0) {
    emptyChart(container, title, width, table);
    return;
  }
  const ticks = niceTicks(max);
  const top = ticks[ticks.length - 1];
  const plotHeight = SIZE.height - SIZE.top - SIZE.bottom;
  const yOf = (v) => SIZE.top + plotHeight * (1 - v / top);
  const slot = (width - SIZE.left - SIZE.right) / Math.max(1, points.length);
  const xOf = (i) => SIZE.left + slot * i + slot / 2;
  const marks = [];
  if (kind === "columns") {
    points.forEach((p, i) => {
      const y = yOf(p.value);
      marks.push(svg("rect", { class: "bar", x: xOf(i) - slot * 0.4, width: Math.max(1, slot * 0.8), y, height: SIZE.top + plotHeight - y },
        [svg("title", {}, [`${hourLabel(p.time, true)}: ${p.value.toLocaleString()} ${unit}`])]));
    });
  } else if (points.length) {
    const line = points.map((p, i) => `${i ? "L" : "M"}${xOf(i).toFixed(1)},${yOf(p.value).toFixed(1)}`).join("");
    marks.push(svg("path", { class: "area", d: `${line}L${xOf(points.length - 1).toFixed(1)},${yOf(0)}L${xOf(0).toFixed(1)},${yOf(0)}Z` }));
    marks.push(svg("path", { class: "line", d: line }));
  }
  const every = Math.max(1, Math.ceil(points.length / Math.max(2, Math.floor(width / 80))));
  const labels = points.map((p, i) => (i % every ? null : svg("text", { x: xOf(i), y: SIZE.height - 10, "text-anchor": "middle" },
    [hourLabel(p.time, p.time.getHours() === 0 || i === 0)]))).filter(Boolean);
  const last = points[points.length - 1];
  const summary = kind === "columns"
    ? `${title}: ${points.reduce((s, p) => s + p.value, 0).toLocaleString()} ${unit} over ${points.length} hours, at most ${max.toLocaleString()} in one hour.`
    : `${title}: from ${points[0]?.value.toLocaleString() ?? 0} to ${last?.value.toLocaleString() ?? 0} ${unit}.`;
  const chart = svg("svg", { viewBox: `0 0 ${width} ${SIZE.height}`, role: "img", "aria-label": summary, class: `chart ${kind}` },
    [...frame(ticks, yOf, width), ...marks, ...labels]);
  container.replaceChildren(chart, table);
}

/* Horizontal bars, one per {label, value}, largest first. */
export function barChart(container, rows, { title, unit }) {
  const width = widthOf(container, 720);
  const table = dataTable(title, ["Rater", unit], rows.map((r) => [r.label, r.value.toLocaleString()]));
  if (!rows.length) {
    emptyChart(container, title, width, table);
    return;
  }
  const barHeight = 22;
  const gap = 8;
  // Room for the longest name (a crowd worker's can be long), up to 45% of the chart.
  const labelWidth = Math.round(Math.min(Math.max(...rows.map((r) => textWidth(r.label))) + 14, width * 0.45));
  const height = SIZE.top + rows.length * (barHeight + gap) + 24;
  const max = Math.max(0, ...rows.map((r) => r.value));
  const ticks = niceTicks(max);
  const top = ticks[ticks.length - 1];
  const xOf = (v) => labelWidth + (width - labelWidth - SIZE.right - 40) * (v / top);
  const marks = rows.flatMap((row, i) => {
    const y = SIZE.top + i * (barHeight + gap);
    return [
      svg("text", { x: labelWidth - 8, y: y + barHeight * 0.7, "text-anchor": "end", class: "label" },
        [svg("title", {}, [row.label]), fitted(row.label, labelWidth - 12)]),
      svg("rect", { class: "bar", x: labelWidth, y, width: Math.max(1, xOf(row.value) - labelWidth), height: barHeight },
        [svg("title", {}, [`${row.label}: ${row.value.toLocaleString()} ${unit}`])]),
      svg("text", { x: xOf(row.value) + 6, y: y + barHeight * 0.7, class: "value" }, [row.value.toLocaleString()]),
    ];
  });
  const grid = ticks.map((tick) => svg("g", { class: "tick" }, [
    svg("line", { x1: xOf(tick), x2: xOf(tick), y1: SIZE.top - 4, y2: height - 22 }),
    svg("text", { x: xOf(tick), y: height - 6, "text-anchor": "middle" }, [tick.toLocaleString()]),
  ]));
  const summary = rows.length
    ? `${title}: ${rows.map((r) => `${r.label} ${r.value.toLocaleString()}`).join(", ")} ${unit}.`
    : `${title}: none yet.`;
  const chart = svg("svg", { viewBox: `0 0 ${width} ${height}`, width, role: "img", "aria-label": summary, class: "chart bars" },
    [...grid, ...marks]);
  container.replaceChildren(chart, table);
}

/* The API's per-hour rows cover only hours with labels: fill the others with zeros. */
export function hourlySeries(perHour, hours, now = new Date()) {
  const counts = new Map(perHour.map((row) => [new Date(row.hour).getTime(), row.labels]));
  const end = new Date(now);
  end.setMinutes(0, 0, 0);
  const series = [];
  for (let i = hours - 1; i >= 0; i -= 1) {
    const time = new Date(end.getTime() - i * 3600 * 1000);
    series.push({ time, value: counts.get(time.getTime()) || 0 });
  }
  return series;
}
