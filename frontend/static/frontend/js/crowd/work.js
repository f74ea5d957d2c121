/* The quota bar over the judging page of a crowd study: asks the server how far the worker is
   (which also tells it the page is still open, so the worker is not taken for idle) and, once the
   quota is met, goes to the completion page. The server enforces the quota itself: this page only
   shows it and moves on. */
import { api } from "../api.js";

const POLL_MS = 3000;
const bar = document.getElementById("crowd-bar");
const judged = document.getElementById("crowd-judged");
const timeLeft = document.getElementById("crowd-time");

function minutesText(seconds) {
  const m = Math.floor(seconds / 60);
  const s = String(seconds % 60).padStart(2, "0");
  return `${m}:${s}`;
}

async function poll() {
  let response;
  try {
    response = await api(`/api/v1/study/${encodeURIComponent(bar.dataset.token)}/progress/`);
  } catch (error) {
    return; // offline: the judging page says so; look again later
  }
  if (!response.ok) return;
  const progress = response.data;
  judged.textContent = String(progress.judged);
  if (timeLeft && progress.seconds_left !== null) timeLeft.textContent = minutesText(progress.seconds_left);
  if (progress.done) window.location.assign(bar.dataset.doneUrl);
}

if (bar) {
  poll();
  setInterval(poll, POLL_MS);
  document.addEventListener("visibilitychange", () => { if (!document.hidden) poll(); });
}
