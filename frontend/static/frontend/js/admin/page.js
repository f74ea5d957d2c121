/* Entry module of every admin page: API forms and buttons, job progress, the pool charts. */
import { bindCampaign } from "./campaign.js";
import { barChart, fromFirstLabel, hourlySeries, timeChart } from "./charts.js";
import { bindApiButtons, bindApiForms, bindJobProgress } from "./forms.js";
import { poolLive } from "./pool_live.js";

/* The pool's charts, drawn from the same snapshot as every other figure of the page: the labels
   so far end at the page's label count, and the bars per rater add up to the hourly columns. */
function drawCharts(root, data) {
  const { hours, per_hour: perHourRows, per_rater: perRaterRows } = data.chart;
  const whole = hourlySeries(perHourRows, hours, new Date(data.at));
  const inWindow = whole.reduce((sum, p) => sum + p.value, 0);
  const before = Math.max(0, data.labels - inWindow);
  const perHour = fromFirstLabel(whole, before);
  let running = before;
  const cumulative = perHour.map((p) => ({ time: p.time, value: (running += p.value) }));
  timeChart(root.querySelector("[data-chart=progress]"), cumulative, { title: "Labels so far", unit: "labels", kind: "area" });
  timeChart(root.querySelector("[data-chart=hourly]"), perHour, { title: "Labels per hour", unit: "labels" });
  const perRater = perRaterRows.map((r) => ({ label: r.rater, value: r.labels }));
  barChart(root.querySelector("[data-chart=raters]"), perRater, { title: `Labels per rater, last ${hours} hours`, unit: "labels" });
  root.dataset.drawn = "true";
}

const DECISION_NAMES = { relevant: "relevant", not_relevant: "not relevant" };

/* A decision is two steps: "Decide: …" asks, "Confirm: …" sends (through bindApiButtons), and
   Cancel takes the question back. The two decide buttons differ in colour as well as in text. */
function askToConfirm(button) {
  const pair = button.closest("[data-api-scope]");
  const box = pair.querySelector("[data-confirm-box]");
  const name = DECISION_NAMES[button.dataset.decide];
  const confirm = document.createElement("button");
  confirm.type = "button";
  confirm.className = button.dataset.decide === "relevant" ? "primary" : "danger";
  confirm.dataset.api = button.dataset.decideUrl;
  confirm.dataset.body = JSON.stringify({ label: button.dataset.decide });
  confirm.dataset.withField = "note";
  confirm.dataset.doneText = `${button.closest("[data-api-scope]").dataset.pairName} resolved as ${name}.`;
  confirm.textContent = `Confirm: ${name}`;
  const cancel = document.createElement("button");
  cancel.type = "button";
  cancel.textContent = "Cancel";
  cancel.addEventListener("click", () => {
    box.hidden = true;
    box.replaceChildren();
    button.focus();
  });
  const question = document.createElement("p");
  question.setAttribute("role", "status");
  question.textContent = `Resolve this pair as ${name}? The raters' labels stay with it.`;
  box.replaceChildren(question, confirm, cancel);
  box.hidden = false;
  confirm.focus();
}

/* The adjudication queue: decided or requeued pairs leave the list; the tab count follows. */
function attentionQueue(root) {
  root.addEventListener("click", (event) => {
    const button = event.target.closest("button[data-decide]");
    if (button) askToConfirm(button);
  });
  root.addEventListener("api-done", () => {
    const count = document.querySelector("[aria-current=page] [data-count]");
    if (count) count.textContent = String(Math.max(0, Number(count.textContent) - 1));
    if (!root.querySelector("[data-remove-on-success]")) root.querySelector("[data-empty]").hidden = false;
  });
}

bindApiForms();
bindApiButtons();
bindJobProgress();
bindCampaign();
const charts = document.getElementById("pool-charts");
const live = document.getElementById("pool-live");
if (live) {
  const select = charts?.querySelector("[name=hours]");
  let last = null;
  const poller = poolLive(live, {
    hours: () => Number(select?.value) || 48,
    onSnapshot: (data) => {
      last = data;
      if (charts) drawCharts(charts, data);
    },
  });
  select?.addEventListener("change", () => poller.now());
  // The charts are drawn at the width they get, so their text stays readable on a phone.
  window.addEventListener("resize", () => { if (last && charts) drawCharts(charts, last); });
}
const queue = document.getElementById("attention-queue");
if (queue) attentionQueue(queue);
