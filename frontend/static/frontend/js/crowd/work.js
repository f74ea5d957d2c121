/* The quota bar over the judging page of a crowd study: asks the server how far the worker is
   (which also tells it the page is still open, so the worker is not taken for idle) and, once the
   quota is met, goes to the completion page. The server enforces the quota itself: this page only
   shows it and moves on.

   The count moves with each answer, not with the next poll: answers the server has not
   acknowledged yet are added to its figure, so the last answer reads "8 of 8" at once rather than
   "7 of 8" until the page leaves. */
import { api } from "../api.js";

const POLL_MS = 3000;
const bar = document.getElementById("crowd-bar");
const judge = document.getElementById("judge");
const judged = document.getElementById("crowd-judged");
const quota = Number(document.getElementById("crowd-quota")?.textContent) || null;
const timeLeft = document.getElementById("crowd-time");
let serverJudged = null;
let given = 0; // answers given on this page
let acked = 0; // ... of which the server has acknowledged this many
let ackedInFigure = 0; // ... and the server's figure already counts this many (acked before that poll asked)

function minutesText(seconds) {
  const m = Math.floor(seconds / 60);
  const s = String(seconds % 60).padStart(2, "0");
  return `${m}:${s}`;
}

function render() {
  if (serverJudged === null) return;
  const count = serverJudged + given - ackedInFigure;
  judged.textContent = String(quota ? Math.min(quota, count) : count);
}

async function poll() {
  const ackedBefore = acked;
  let response;
  try {
    response = await api(`/api/v1/study/${encodeURIComponent(bar.dataset.token)}/progress/`);
  } catch (error) {
    return; // offline: the judging page says so; look again later
  }
  if (!response.ok) return;
  const progress = response.data;
  serverJudged = progress.judged;
  ackedInFigure = Math.max(ackedInFigure, ackedBefore);
  render();
  if (timeLeft && progress.seconds_left !== null) timeLeft.textContent = minutesText(progress.seconds_left);
  if (progress.done) window.location.assign(bar.dataset.doneUrl);
}

if (bar) {
  poll();
  setInterval(poll, POLL_MS);
  document.addEventListener("visibilitychange", () => { if (!document.hidden) poll(); });
  judge?.addEventListener("judge:answered", (event) => {
    if (event.detail.mode === "training") return; // training is not part of the quota
    given += 1;
    render();
  });
  judge?.addEventListener("judge:saved", (event) => {
    if (event.detail.mode === "training") return;
    acked += 1;
    poll();
  });
}
