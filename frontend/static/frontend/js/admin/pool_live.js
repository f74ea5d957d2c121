/* The pool page follows the raters' work: it polls GET pools/{id}/live/ every few seconds while
   the tab is in view (a hidden tab asks nothing and asks at once when shown again) and rewrites
   the figures marked data-live="path.in.answer", the state bar's data-live-share widths and the
   raters table's data-live-rater cells and the queries table, all from one snapshot of the pool
   (selectors/dashboard.py pool_live). `onSnapshot(data)` gets each snapshot (the charts). */
import { api } from "../api.js";

function valueAt(data, path) {
  return path.split(".").reduce((node, key) => (node == null ? undefined : node[key]), data);
}

/* Kept the same as frontend/views/admin_ui.py active_text and rate_text (the first render). */
export function activeText(seconds) {
  const minutes = Math.round(seconds / 60);
  if (seconds < 60) return `${Math.round(seconds)} s`;
  return minutes >= 60 ? `${Math.floor(minutes / 60)} h ${String(minutes % 60).padStart(2, "0")} min` : `${minutes} min`;
}

export function rateText(rate) {
  if (rate == null) return "–";
  return rate >= 10 ? `${rate.toFixed(0)}/h` : `${rate.toFixed(1)}/h`;
}

function stamp(iso) {
  const d = new Date(iso);
  const pad = (n) => String(n).padStart(2, "0");
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}`;
}

function cell(tag, text, attributes = {}) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attributes)) node.setAttribute(key, value);
  if (text !== null) node.textContent = text;
  return node;
}

function percent(value) {
  return value == null ? "–" : `${Math.round(value * 100)}%`;
}

/* The training cell as the page renders it: a badge, and the score once there is one. */
function trainingCell(node, rater, hasTraining) {
  if (!hasTraining && rater.training_score == null) {
    node.replaceChildren(cell("span", "no training", { class: "muted" }));
    return;
  }
  const parts = [cell("span", rater.training, { class: `badge ${rater.training}` })];
  if (rater.training_score != null) parts.push(` ${percent(rater.training_score)}`);
  node.replaceChildren(...parts);
}

/* The queries table, rebuilt from the snapshot's rows (stopped first, then the first in turn). */
function showQueries(queries) {
  const body = document.getElementById("query-rows");
  if (!body) return;
  const pool = body.dataset.pool;
  const rows = queries.rows.map((q) => {
    const head = cell("th", null, { scope: "row", "data-title": "Query" });
    head.append(cell("span", q.caption_text, { class: "caption-text" }), " ", cell("span", q.caption_external_id, { class: "muted small" }));
    const actions = cell("td", null, { class: "actions" });
    if (q.query_stopped) {
      actions.append(cell("button", "Resume", {
        type: "button", "data-api": `/api/v1/pools/${pool}/queries/${q.caption}/resume/`,
        "data-confirm": "Send this query's pairs back to the queue? Its budget and misses count again from here.",
      }));
    }
    const row = cell("tr", null, { "data-caption": String(q.caption) });
    row.append(head, cell("td", String(q.pairs), { class: "num", "data-title": "Pairs" }),
      cell("td", queries.budget ? `${q.judged} / ${queries.budget}` : String(q.judged), { class: "num", "data-title": "Judged" }),
      cell("td", String(q.relevant), { class: "num", "data-title": "Relevant found" }),
      cell("td", String(q.left), { class: "num", "data-title": "Left" }),
      cell("td", q.stopped ? q.stopped_why : "–", { "data-title": "Stopped" }), actions);
    return row;
  });
  if (!rows.length) {
    const empty = cell("tr", null);
    empty.append(cell("td", "No queries.", { colspan: "7" }));
    rows.push(empty);
  }
  body.replaceChildren(...rows);
  const more = document.querySelector("[data-queries-more]");
  if (more) more.hidden = queries.total <= queries.rows.length;
}

function show(data) {
  for (const node of document.querySelectorAll("[data-live]")) {
    const value = valueAt(data, node.dataset.live);
    if (value === undefined) continue;
    node.textContent = node.dataset.format === "percent" ? percent(value) : String(value);
  }
  for (const node of document.querySelectorAll("[data-live-share]")) {
    const share = data.pairs ? Math.round((100 * valueAt(data, node.dataset.liveShare)) / data.pairs) : 0;
    node.setAttribute("width", `${share}%`);
  }
  const bar = document.querySelector("[data-live-label]");
  if (bar) {
    const s = data.by_state;
    bar.setAttribute("aria-label", `Pairs by state: ${s.resolved} resolved, ${s.open} open, ${s.adjudication} escalated, ${s.set_aside} set aside, ${s.disagreement} without majority`);
  }
  for (const rater of data.raters) {
    const row = document.querySelector(`tr[data-rater-id="${rater.rater_id}"]`);
    if (!row) continue;
    const cells = {
      labels: String(rater.labels), labels_today: String(rater.labels_today), labels_last_hour: String(rater.labels_last_hour),
      active: activeText(rater.active_seconds), rate: rateText(rater.rate_per_hour),
      mean_seconds: rater.mean_seconds == null ? "–" : `${rater.mean_seconds.toFixed(1)} s`,
      gold: rater.gold_answered ? `${rater.gold_correct}/${rater.gold_answered}` : "–",
      ambiguous: String(rater.ambiguous), broken: String(rater.broken),
      last_label_at: rater.last_label_at ? stamp(rater.last_label_at) : "–",
    };
    for (const [key, text] of Object.entries(cells)) {
      const node = row.querySelector(`[data-live-rater=${key}]`);
      if (node) node.textContent = text;
    }
    const training = row.querySelector("[data-live-rater=training]");
    if (training) trainingCell(training, rater, data.training_pairs > 0);
  }
  showQueries(data.queries);
  const rates = document.querySelector("#pool-charts [data-rates]");
  const working = data.raters.filter((r) => r.rate_per_hour != null);
  if (rates) {
    rates.textContent = working.length
      ? `Per rater, labels per active hour over the last ${data.window_hours} hours: ${working
        .map((r) => `${r.rater} ${rateText(r.rate_per_hour)} (${r.labels_window} in ${activeText(r.active_seconds)})`).join(", ")}.`
      : "";
  }
}

export function poolLive(status, { onSnapshot, hours } = {}) {
  const url = status.dataset.liveUrl;
  const every = Number(status.dataset.pollMs) || 5000;
  const note = status.textContent;
  let timer = null;
  let polls = 0;

  const schedule = (ms) => {
    clearTimeout(timer);
    timer = document.visibilityState === "hidden" ? null : setTimeout(poll, ms);
  };
  async function poll() {
    timer = null;
    let response = null;
    try {
      response = await api(`${url}?hours=${hours ? hours() : 48}`);
    } catch {
      response = null;
    }
    if (response && response.ok) {
      show(response.data);
      onSnapshot?.(response.data);
      polls += 1;
      status.dataset.polls = String(polls);
      status.dataset.state = "live";
      status.textContent = `${note} Last update ${new Date(response.data.at).toLocaleTimeString()}.`;
      schedule(every);
    } else {
      status.dataset.state = "failing";
      status.textContent = `${note} The last update failed; trying again.`;
      schedule(every * 3);
    }
  }
  document.addEventListener("visibilitychange", () => {
    if (document.visibilityState === "hidden") {
      clearTimeout(timer);
      timer = null;
      status.dataset.state = "paused";
    } else if (timer === null) {
      poll();
    }
  });
  // At once: the first answer fills the rates line and the charts, which the page does not render.
  if (document.visibilityState !== "hidden") poll();
  return { now: () => { clearTimeout(timer); return poll(); } };
}
