/* The pool page follows the raters' work: it polls GET pools/{id}/live/ every few seconds while
   the tab is in view (a hidden tab asks nothing and asks at once when shown again) and rewrites
   the figures marked data-live="path.in.answer", the state bar's data-live-share widths and the
   raters table's data-live-rater cells. `onLabels(total)` is told when the label count moves. */
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

function show(data) {
  for (const node of document.querySelectorAll("[data-live]")) {
    const value = valueAt(data, node.dataset.live);
    if (value === undefined) continue;
    node.textContent = node.dataset.format === "percent" ? (value == null ? "–" : `${Math.round(value * 100)}%`) : String(value);
  }
  for (const node of document.querySelectorAll("[data-live-share]")) {
    const share = data.pairs ? Math.round((100 * valueAt(data, node.dataset.liveShare)) / data.pairs) : 0;
    node.setAttribute("width", `${share}%`);
  }
  for (const rater of data.raters) {
    const row = document.querySelector(`tr[data-rater-id="${rater.rater_id}"]`);
    if (!row) continue;
    const cells = {
      labels: String(rater.labels), labels_today: String(rater.labels_today), labels_last_hour: String(rater.labels_last_hour),
      active: activeText(rater.active_seconds), rate: rateText(rater.rate_per_hour),
      last_label_at: rater.last_label_at ? stamp(rater.last_label_at) : null,
    };
    for (const [key, text] of Object.entries(cells)) {
      const cell = row.querySelector(`[data-live-rater=${key}]`);
      if (cell && text !== null) cell.textContent = text;
    }
  }
  const rates = document.querySelector("#pool-charts [data-rates]");
  const working = data.raters.filter((r) => r.rate_per_hour != null);
  if (rates) {
    rates.textContent = working.length
      ? `Per rater, labels per active hour over the last ${data.window_hours} hours: ${working
        .map((r) => `${r.rater} ${rateText(r.rate_per_hour)} (${r.labels_window} in ${activeText(r.active_seconds)})`).join(", ")}.`
      : "";
  }
}

export function poolLive(status, { onLabels } = {}) {
  const url = status.dataset.liveUrl;
  const every = Number(status.dataset.pollMs) || 5000;
  const note = status.textContent;
  let timer = null;
  let labels = null;
  let polls = 0;

  const schedule = (ms) => {
    clearTimeout(timer);
    timer = document.visibilityState === "hidden" ? null : setTimeout(poll, ms);
  };
  async function poll() {
    timer = null;
    let response = null;
    try {
      response = await api(url);
    } catch {
      response = null;
    }
    if (response && response.ok) {
      show(response.data);
      polls += 1;
      status.dataset.polls = String(polls);
      status.dataset.state = "live";
      status.textContent = `${note} Last update ${new Date(response.data.at).toLocaleTimeString()}.`;
      if (labels !== null && labels !== response.data.labels) onLabels?.(response.data.labels);
      labels = response.data.labels;
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
  // At once: the first answer fills the rates line, which the page does not render.
  if (document.visibilityState !== "hidden") poll();
}
