/* The judging screen: one caption, one clip, four answers, keyboard first.

   Speed: the page holds two leases, the pair on screen and the next one, whose clip is already
   loading in a second <video>. Answering swaps the two at once and sends the answer in the
   background through the outbox; only then is the next pair after that leased.

   Safety: an answer is stored in the outbox (localStorage) before the screen moves on and stays
   there until the server acknowledges it, so a cut connection, an expired session or a closed
   tab loses nothing. Leases are kept alive by a heartbeat; an answer whose lease ran out is still
   sent (the server stores it, counted or as surplus). */
import { api, NetworkError, newClientId } from "./api.js";
import { Heartbeat, heartbeatDelay } from "./leases.js";
import { Outbox } from "./outbox.js";
import { PlayerControls, SpanPlayer } from "./player.js";
import { showSaveStatus } from "./status.js";

const ARM_DELAY_MS = 250; // a key pressed twice must not also answer the pair that replaced it
const KEY_VALUES = { 1: "relevant", 2: "not_relevant", 3: "ambiguous", 4: "broken" };
const VALUE_NAMES = { relevant: "Relevant", not_relevant: "Not relevant", ambiguous: "Ambiguous", broken: "Clip doesn't play" };
const MAX_EXCLUDE = 10; // what the API accepts
const POLL_IDLE_MS = 30000; // no work / paused: look again this often
const POLL_BUSY_MS = 3000; // waiting for our own answers to land

const STATES = {
  loading: ["Loading the next pair…", ""],
  no_work_left: ["No work left", "Every pair of this pool that you may judge has its answers. Thank you! New pairs may arrive later; this page looks again every 30 seconds."],
  paused: ["Your work is paused", "An admin has paused your account. Your answers so far are saved. This page looks again every 30 seconds."],
  training_failed: ["Training not passed", "Your training score is below the pass mark. Ask an admin to let you take the training again."],
  training_pending: ["Checking your training answers…", "The next pair comes as soon as the server has your answers."],
  holding_max: ["Waiting for the server…", "The next pair comes as soon as your last answers have landed."],
  offline: ["You are offline", "Your answers are kept on this device. The next pair loads when the connection returns."],
  signed_out: ["Signed out", "Your session has ended. Log in again: the answers on this device are sent then."],
  no_access: ["No access to this pool", "This pool does not exist, or an admin has removed your access."],
  server_error: ["The server has a problem", "Trying again in a few seconds."],
};

class Slot {
  constructor(assignment, player) {
    this.assignment = assignment;
    this.player = player;
    this.answered = false;
    this.leaseGone = false;
    this.shownAt = 0;
  }

  get leaseId() {
    return this.assignment.lease_id;
  }

  get pairId() {
    return this.assignment.pair_id;
  }

  get training() {
    return this.assignment.mode === "training";
  }
}

class JudgePage {
  constructor(root) {
    this.root = root;
    this.poolId = Number(root.dataset.pool);
    this.poolPairs = Number(root.dataset.poolPairs) || 0;
    this.outbox = new Outbox(root.dataset.user);
    this.el = Object.fromEntries(
      ["work", "caption", "answers", "comment-form", "comment", "comment-cancel", "feedback", "feedback-title", "feedback-answer",
        "feedback-explanation", "feedback-continue", "state", "state-title", "state-text", "state-retry", "today", "left",
        "pool-progress", "training-banner", "notice", "clip-error", "guidelines", "guidelines-open", "save-status"]
        .map((id) => [id, document.getElementById(id)]));
    this.players = [...root.querySelectorAll("video.clip")].map((video) => new SpanPlayer(video));
    this.controls = new PlayerControls(root.querySelector("[data-player-controls]"));
    this.current = null;
    this.preloaded = null;
    this.state = "loading";
    this.armedAt = 0;
    this.answerStartedAt = null;
    this.awaitingFeedback = null; // client id of the training answer whose feedback is shown next
    this.progress = null;
    // Pairs answered here or still in the outbox: never shown again, and their leases (live on
    // the server until the answer lands) are excluded when asking for the next pair.
    this.answeredPairs = new Set();
    this.heldForAnswered = new Map(); // lease id -> pair id
    for (const item of this.myItems()) {
      this.answeredPairs.add(item.meta.pairId);
      this.heldForAnswered.set(item.meta.leaseId, item.meta.pairId);
    }
    this.refilling = null;
    this.refillAgain = false;
    this.retryTimer = 0;
    this.heartbeat = new Heartbeat({
      url: (leaseId) => `/api/v1/leases/${leaseId}/heartbeat/`,
      slots: () => [this.current, this.preloaded],
      onGone: (slot, gone) => this.leaseEnded(slot, gone),
    });
    this.progressTimer = 0;
    this.armTimer = 0;
    this.timings = [];
    window.rejudgeTimings = this.timings; // submit-to-next-clip times, read by the latency benchmark
  }

  myItems() {
    return this.outbox.items((item) => item.meta && item.meta.kind === "label" && item.meta.poolId === this.poolId);
  }

  start() {
    showSaveStatus(this.el["save-status"], this.outbox);
    this.outbox.addEventListener("acked", (event) => this.onAcked(event.detail));
    this.outbox.addEventListener("refused", (event) => this.onAcked(event.detail));
    this.outbox.addEventListener("change", () => this.onConnectionChange());
    for (const player of this.players) player.addEventListener("failed", () => this.onClipFailed(player));
    document.addEventListener("keydown", (event) => this.onKey(event));
    this.el.answers.addEventListener("click", (event) => {
      const button = event.target.closest("button[data-value]");
      if (button) this.choose(button.dataset.value, { viaClick: true });
    });
    this.el["comment-form"].addEventListener("submit", (event) => {
      event.preventDefault();
      this.answer("ambiguous", this.el.comment.value.trim());
    });
    this.el.comment.addEventListener("keydown", (event) => {
      if (event.key === "Enter" && !event.shiftKey) {
        event.preventDefault();
        this.el["comment-form"].requestSubmit();
      } else if (event.key === "Escape") {
        event.preventDefault();
        this.closeComment();
      }
    });
    this.el["comment-cancel"].addEventListener("click", () => this.closeComment());
    this.el["feedback-continue"].addEventListener("click", () => this.continueAfterFeedback());
    this.el["state-retry"].addEventListener("click", () => this.refill());
    this.el["guidelines-open"].addEventListener("click", () => this.toggleGuidelines());
    document.addEventListener("visibilitychange", () => {
      if (document.visibilityState === "visible") {
        this.heartbeat.beat();
        this.refill();
      }
    });
    this.setState("loading");
    this.refreshProgress();
    // Answers left from an earlier visit go first, so that their leases are done before we ask.
    const flushed = this.myItems().length ? this.outbox.flush() : Promise.resolve();
    flushed.finally(() => this.refill());
  }

  /* ---- leasing -------------------------------------------------------------------------- */

  excludedLeases() {
    const ids = [this.current?.leaseId, this.preloaded?.leaseId, ...[...this.heldForAnswered.keys()].reverse()];
    return [...new Set(ids.filter((id) => id != null))].slice(0, MAX_EXCLUDE);
  }

  refill() {
    if (this.refilling) {
      this.refillAgain = true;
      return this.refilling;
    }
    clearTimeout(this.retryTimer);
    this.refilling = (async () => {
      try {
        do {
          this.refillAgain = false;
          await this.fillSlots();
        } while (this.refillAgain);
      } finally {
        this.refilling = null;
      }
    })();
    return this.refilling;
  }

  async fillSlots() {
    for (let attempt = 0; attempt < 6 && (!this.current || !this.preloaded); attempt += 1) {
      let response;
      try {
        response = await api(`/api/v1/pools/${this.poolId}/next/`, { method: "POST", json: { exclude: this.excludedLeases() } });
      } catch (error) {
        if (!(error instanceof NetworkError)) throw error;
        this.outbox.setConnection("offline");
        if (!this.current) this.setState("offline");
        this.retryIn(POLL_BUSY_MS);
        return;
      }
      if (response.status === 404) return this.setState("no_access");
      if (response.status === 401 || response.status === 403) {
        this.outbox.setConnection("signed_out");
        if (!this.current) this.setState("signed_out");
        return this.retryIn(POLL_IDLE_MS);
      }
      if (!response.ok) {
        if (!this.current) this.setState("server_error");
        return this.retryIn(POLL_BUSY_MS * 2);
      }
      const { assignment, reason } = response.data;
      if (!assignment) return this.noAssignment(reason);
      if (this.answeredPairs.has(assignment.pair_id)) {
        // A pair whose answer is still on its way: the lease ends when the answer lands.
        this.heldForAnswered.set(assignment.lease_id, assignment.pair_id);
        continue;
      }
      if (this.current?.leaseId === assignment.lease_id || this.preloaded?.leaseId === assignment.lease_id) continue;
      const slot = new Slot(assignment, this.freePlayer());
      slot.player.load(assignment.clip);
      this.heartbeat.within(heartbeatDelay(assignment.expires_at, response));
      if (!this.current) this.show(slot);
      else this.preloaded = slot;
    }
    if (!this.current) this.retryIn(POLL_BUSY_MS); // only pairs whose answers are still on their way came back
  }

  freePlayer() {
    const busy = new Set([this.current?.player, this.preloaded?.player]);
    return this.players.find((player) => !busy.has(player)) || this.players[0];
  }

  noAssignment(reason) {
    if (!this.current) this.setState(STATES[reason] ? reason : "no_work_left");
    const waitingForUs = reason === "holding_max" || reason === "training_pending";
    if (waitingForUs || !this.current) this.retryIn(waitingForUs ? POLL_BUSY_MS : POLL_IDLE_MS);
  }

  retryIn(ms) {
    clearTimeout(this.retryTimer);
    this.retryTimer = setTimeout(() => this.refill(), ms);
  }

  /* ---- showing a pair ------------------------------------------------------------------- */

  show(slot) {
    this.current = slot;
    for (const player of this.players) {
      const active = player === slot.player;
      player.video.classList.toggle("active", active);
      player.video.setAttribute("aria-hidden", String(!active));
      if (!active) player.pause();
    }
    this.controls.attach(slot.player);
    slot.player.play();
    this.el.caption.textContent = slot.assignment.caption.text;
    this.el["clip-error"].hidden = !slot.player.failed;
    this.root.dataset.pairId = String(slot.pairId);
    this.root.dataset.leaseId = String(slot.leaseId);
    this.root.dataset.mode = slot.assignment.mode;
    this.el.notice.hidden = true;
    this.closeComment({ focus: false });
    this.el.feedback.hidden = true;
    this.el.answers.hidden = false;
    slot.shownAt = performance.now();
    this.arm();
    this.renderTraining();
    this.setState("working");
    this.measureSwap(slot);
  }

  /* Submit-to-next-clip time: from the key press to the first paint with the new clip's frame. */
  measureSwap(slot) {
    const startedAt = this.answerStartedAt;
    this.answerStartedAt = null;
    if (startedAt == null) return;
    const record = () => requestAnimationFrame(() => {
      const elapsed = performance.now() - startedAt;
      this.timings.push({ pairId: slot.pairId, ms: elapsed, preloaded: slot.wasPreloaded });
      performance.measure("rejudge:next-clip", { start: startedAt, end: performance.now() });
    });
    if (slot.player.ready) requestAnimationFrame(record);
    else slot.player.video.addEventListener("loadeddata", record, { once: true });
  }

  showNext() {
    const next = this.preloaded;
    this.preloaded = null;
    if (this.current) this.current.player.pause();
    this.current = null;
    if (next) {
      next.wasPreloaded = true;
      this.show(next);
    } else {
      this.setState("loading");
    }
    this.refill();
  }

  setState(state) {
    this.state = state;
    this.root.dataset.state = state;
    const working = state === "working" || state === "comment" || state === "feedback";
    this.el.work.hidden = !working;
    this.el.state.hidden = working;
    if (!working) {
      const [title, text] = STATES[state] || STATES.loading;
      this.el["state-title"].textContent = title;
      this.el["state-text"].textContent = text;
      this.el["state-retry"].hidden = state === "loading" || state === "no_access";
      for (const player of this.players) player.pause();
    }
  }

  /* Answers (and Continue) count only ARM_DELAY_MS after what they answer appeared. */
  arm() {
    this.armedAt = performance.now() + ARM_DELAY_MS;
    this.root.dataset.armed = "false";
    clearTimeout(this.armTimer);
    this.armTimer = setTimeout(() => {
      this.root.dataset.armed = "true";
    }, ARM_DELAY_MS);
  }

  onClipFailed(player) {
    if (this.current && this.current.player === player) this.el["clip-error"].hidden = false;
  }

  /* ---- answering ------------------------------------------------------------------------ */

  choose(value, { viaClick = false } = {}) {
    if (this.state !== "working") return;
    if (viaClick) this.el.work.focus({ preventScroll: true }); // so Space plays, not re-presses the button
    if (value === "ambiguous") this.openComment();
    else this.answer(value);
  }

  answer(value, comment = "") {
    const slot = this.current;
    if (!slot || slot.answered || (this.state !== "working" && this.state !== "comment")) return;
    if (performance.now() < this.armedAt) return;
    slot.answered = true;
    this.answerStartedAt = performance.now();
    const clientId = newClientId();
    this.outbox.add({
      clientId,
      url: "/api/v1/labels/",
      body: { client_id: clientId, pair_id: slot.pairId, value, seconds: Math.round((performance.now() - slot.shownAt) / 10) / 100, comment },
      meta: { kind: "label", poolId: this.poolId, pairId: slot.pairId, leaseId: slot.leaseId, mode: slot.assignment.mode },
    });
    this.answeredPairs.add(slot.pairId);
    this.heldForAnswered.set(slot.leaseId, slot.pairId);
    this.renderProgress();
    if (slot.training) this.awaitFeedback(clientId, value);
    else this.showNext();
  }

  openComment() {
    this.setState("comment");
    this.el["comment-form"].hidden = false;
    this.el.answers.hidden = true;
    this.el.comment.value = "";
    this.el.comment.focus();
  }

  closeComment({ focus = true } = {}) {
    this.el["comment-form"].hidden = true;
    this.el.answers.hidden = false;
    if (this.state === "comment") this.setState("working");
    if (focus) this.el.work.focus({ preventScroll: true });
  }

  awaitFeedback(clientId, value) {
    this.awaitingFeedback = clientId;
    this.setState("feedback");
    this.el["comment-form"].hidden = true;
    this.el.answers.hidden = true;
    this.el.feedback.hidden = false;
    this.el.feedback.dataset.result = "pending";
    this.el["feedback-title"].textContent = "Checking your answer…";
    this.el["feedback-answer"].textContent = `You answered: ${VALUE_NAMES[value]}.`;
    this.el["feedback-explanation"].textContent = "";
    this.el["feedback-continue"].disabled = true;
    this.current.player.pause();
    this.onConnectionChange();
  }

  showFeedback(feedback) {
    const box = this.el.feedback;
    box.dataset.result = feedback ? (feedback.correct ? "correct" : "wrong") : "none";
    if (feedback) {
      this.el["feedback-title"].textContent = feedback.correct ? "✓ Correct" : "✗ Not quite";
      this.el["feedback-answer"].textContent = `The right answer is: ${VALUE_NAMES[feedback.answer] || feedback.answer}.`;
      this.el["feedback-explanation"].textContent = feedback.explanation || "";
    } else {
      this.el["feedback-title"].textContent = "Answer saved";
    }
    this.el["feedback-continue"].disabled = false;
    this.el["feedback-continue"].textContent = "";
    this.el["feedback-continue"].append("Continue ", Object.assign(document.createElement("kbd"), { textContent: "Enter" }));
    this.arm();
    this.el["feedback-continue"].focus({ preventScroll: true });
  }

  continueAfterFeedback() {
    if (this.state !== "feedback" || this.el["feedback-continue"].disabled || performance.now() < this.armedAt) return;
    this.awaitingFeedback = null;
    this.el.feedback.hidden = true;
    this.el.work.focus({ preventScroll: true });
    this.showNext();
  }

  onAcked({ item, status, data }) {
    if (!item.meta || item.meta.poolId !== this.poolId) return;
    for (const [leaseId, pairId] of this.heldForAnswered) if (pairId === item.meta.pairId) this.heldForAnswered.delete(leaseId);
    if (item.clientId === this.awaitingFeedback) this.showFeedback(status < 300 && data ? data.feedback : null);
    this.refreshProgressSoon();
    if (!this.current || !this.preloaded) this.refill();
  }

  onConnectionChange() {
    this.renderProgress();
    if (this.state === "feedback" && this.el["feedback-continue"].disabled && this.outbox.connection !== "online") {
      // Feedback needs the server; the answer itself is safe, so the rater need not wait.
      this.el["feedback-title"].textContent = "Answer kept on this device";
      this.el["feedback-answer"].textContent = "The right answer shows once the server has it; you can go on meanwhile.";
      this.el["feedback-continue"].disabled = false;
    }
    if (this.outbox.connection === "online" && ["offline", "signed_out", "server_error"].includes(this.state)) this.refill();
  }

  /* ---- leases: heartbeat ---------------------------------------------------------------- */

  leaseEnded(slot, gone) {
    if (slot === this.preloaded) {
      // Not shown yet: take a fresh pair instead of one that others may now be judging.
      this.preloaded = null;
      this.refill();
      return;
    }
    if (slot === this.current) {
      this.el.notice.hidden = false;
      this.el.notice.textContent = gone.still_needed === false
        ? "Your hold on this pair ran out and others have judged it meanwhile. Your answer is still saved, as an extra one."
        : "Your hold on this pair ran out. Answer anyway: your answer is saved.";
    }
  }

  /* ---- progress ------------------------------------------------------------------------- */

  refreshProgressSoon() {
    clearTimeout(this.progressTimer);
    this.progressTimer = setTimeout(() => this.refreshProgress(), 250);
  }

  async refreshProgress() {
    let response;
    try {
      response = await api(`/api/v1/pools/${this.poolId}/my-progress/`);
    } catch {
      return;
    }
    if (!response.ok) return;
    const before = this.progress?.training?.status;
    this.progress = response.data;
    const after = this.progress.training.status;
    if (before === "pending" && after === "passed") {
      this.el.notice.hidden = false;
      this.el.notice.textContent = `Training passed (score ${Math.round((this.progress.training.score || 0) * 100)}%). From now on your answers count.`;
    }
    this.renderProgress();
    this.renderTraining();
  }

  renderProgress() {
    if (!this.progress) return;
    const waiting = this.myItems().length;
    this.el.today.textContent = String(this.progress.labelled_today + waiting);
    this.el.left.textContent = this.progress.left_in_pool.toLocaleString();
    const bar = this.el["pool-progress"];
    const done = this.poolPairs ? (this.poolPairs - this.progress.left_in_pool) / this.poolPairs : 0;
    bar.value = Math.max(0, Math.min(1, done));
    bar.setAttribute("aria-valuetext", `${Math.round(bar.value * 100)}% of the pool judged`);
    bar.title = `${Math.round(bar.value * 100)}% of the pool judged`;
  }

  renderTraining() {
    const banner = this.el["training-banner"];
    const training = this.progress?.training;
    if (this.current?.training) {
      const answered = training ? Math.min(training.total, training.answered + this.myItems().length) : 0;
      banner.hidden = false;
      banner.textContent = training
        ? `Training: pair ${Math.min(training.total, answered + 1)} of ${training.total}. After each answer you see the right one and why.`
        : "Training: after each answer you see the right one and why.";
    } else {
      banner.hidden = true;
    }
  }

  /* ---- keyboard ------------------------------------------------------------------------- */

  toggleGuidelines() {
    const dialog = this.el.guidelines;
    if (dialog.open) dialog.close();
    else dialog.showModal();
  }

  onKey(event) {
    if (event.ctrlKey || event.metaKey || event.altKey || event.defaultPrevented) return;
    if (this.el.guidelines.open) {
      if (event.key === "g" || event.key === "G") {
        event.preventDefault();
        this.el.guidelines.close();
      }
      return; // the dialog handles Esc itself
    }
    const target = event.target;
    if (target.closest && target.closest("textarea, input:not([type=range]), select, [contenteditable]")) return;
    const onButton = target.closest && target.closest("button, a");
    const key = event.key;
    if (event.repeat && (key in KEY_VALUES || key === "Enter")) {
      event.preventDefault(); // a held key answers once
      return;
    }
    if (this.state === "feedback") {
      if (key === "Enter" && !onButton) {
        event.preventDefault();
        this.continueAfterFeedback();
      } else if (key === "g" || key === "G") {
        event.preventDefault();
        this.toggleGuidelines();
      }
      return;
    }
    if (key in KEY_VALUES) {
      event.preventDefault();
      this.choose(KEY_VALUES[key]);
      return;
    }
    const player = this.current?.player;
    switch (key) {
      case " ":
        if (onButton) return; // Space presses the focused button
        event.preventDefault();
        player?.toggle();
        break;
      case "r":
      case "R":
        event.preventDefault();
        player?.replay();
        break;
      case "ArrowLeft":
      case "ArrowRight":
        if (target.matches && target.matches("input[type=range]")) return; // the scrubber moves itself
        event.preventDefault();
        player?.seekBy(key === "ArrowLeft" ? -1 : 1);
        break;
      case "[":
      case "]":
        event.preventDefault();
        this.controls.stepRate(key === "[" ? -1 : 1);
        break;
      case "m":
      case "M":
        event.preventDefault();
        this.controls.toggleMute();
        break;
      case "g":
      case "G":
      case "?":
        event.preventDefault();
        this.toggleGuidelines();
        break;
      default:
    }
  }
}

const root = document.getElementById("judge");
if (root) {
  new JudgePage(root).start();
}
