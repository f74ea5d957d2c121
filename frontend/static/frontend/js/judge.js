/* The judging screen: one caption, one clip, four answers, keyboard first.

   Speed: the page holds two leases, the pair on screen and the next one, whose clip is already
   loading in a second <video>. Answering swaps the two at once, sends the answer in the
   background through the outbox and leases the pair after that.

   Safety: an answer is stored in the outbox (localStorage) before the screen moves on and stays
   there until the server acknowledges it, so a cut connection, an expired session or a closed
   tab loses nothing. Leases are kept alive by a heartbeat; an answer whose lease ran out is still
   sent (the server stores it, counted or as surplus).

   Seeing: relevant / not relevant open only once the clip has played its minimum (the
   assignment's min_watch_seconds, which the server enforces too); while it loads the stage says
   so. A clip that fails, or shows no new frame for a while, leaves only "doesn't play" and
   "ambiguous". A key that is not taken says why, at once.

   One tab per pool: the server hands a rater's held pairs back to whoever asks, so two tabs would
   show the same pairs and one tab's answers would be refused. A Web Lock per rater and pool lets
   one tab judge; another says so and can take the work over (the first then stops and says so).
   An answer the server refuses is never shown as saved: the page says which one and why.

   Breaks: a page nobody touches gives its pairs back after the server's idle_release_seconds,
   counting down in view for the last part; "Take a break" gives them back at once. */
import { api, newClientId } from "./api.js";
import { toggleGuidelines } from "./guidelines.js";
import { Outbox } from "./outbox.js";
import { PlayerControls, SpanPlayer } from "./player.js";
import { showSaveStatus } from "./status.js";
import { Undo } from "./undo.js";
import { WorkSlots } from "./work_slots.js";

const ARM_DELAY_MS = 250; // a key pressed twice must not also answer the pair that replaced it
const SLOW_LOAD_MS = 5000; // no frame this long after the pair showed: say so, and offer 3 and 4
const STALL_MS = 4000; // playing, and no new frame this long: stalled
const GATE_TICK_MS = 100;
const VOTES = new Set(["relevant", "not_relevant"]);
const KEY_VALUES = { 1: "relevant", 2: "not_relevant", 3: "ambiguous", 4: "broken" };
const VALUE_NAMES = { relevant: "Relevant", not_relevant: "Not relevant", ambiguous: "Ambiguous", broken: "Clip doesn't play" };

const STATES = {
  loading: ["Loading the next pair…", ""],
  no_work_left: ["No work left", "Every pair of this pool that you may judge has its answers. Thank you! New pairs may arrive later; this page looks again every 30 seconds."],
  quota_reached: ["You have reached this study's quota", "Thank you! Your answers are saved. Go on to the completion page to finish the study."],
  paused: ["Your work is paused", "An admin has paused your account. Your answers so far are saved. This page looks again every 30 seconds."],
  training_failed: ["Training not passed", "Your training score is below the pass mark. Ask an admin to let you take the training again."],
  training_pending: ["Checking your training answers…", "The next pair comes as soon as the server has your answers."],
  holding_max: ["Waiting for the server…", "The next pair comes as soon as your last answers have landed."],
  offline: ["You are offline", "Your answers are kept on this device. The next pair loads when the connection returns."],
  signed_out: ["Signed out", "Your session has ended. Log in again: the answers on this device are sent then."],
  no_access: ["No access to this pool", "This pool does not exist, or an admin has removed your access."],
  server_error: ["The server has a problem", "Trying again in a few seconds."],
  break: ["You are on a break", ""],
  other_tab: ["This pool is open in another tab", "Answers go from one tab at a time, so none is lost. Go on in the other tab, or move the work to this one."],
  moved_away: ["Judging moved to another tab", "You took this pool's work over in another tab. Your answers from here are saved."],
};
const TAKE_OVER_STATES = new Set(["other_tab", "moved_away"]);
const BREAK_TEXT = {
  asked: "Your pairs went back to the pool so that others can judge them meanwhile. Your answers are saved.",
  idle: "Nothing was pressed for a while, so your pairs went back to the pool for others. Your answers are saved.",
};
const IDLE_DEFAULT_SECONDS = 300;
const IDLE_WARN_MAX_SECONDS = 60; // the countdown shows for the last minute (half the time if shorter)

class JudgePage {
  constructor(root) {
    this.root = root;
    this.poolId = Number(root.dataset.pool);
    this.outbox = new Outbox(root.dataset.user);
    this.el = Object.fromEntries(
      ["work", "caption", "answers", "comment-form", "comment", "comment-cancel", "feedback", "feedback-title", "feedback-answer",
        "feedback-explanation", "feedback-continue", "state", "state-title", "state-text", "state-retry", "today", "left",
        "pool-progress", "training-banner", "notice", "clip-error", "guidelines", "guidelines-open", "save-status",
        "clip-loading", "answer-hint", "key-cue", "state-take", "state-resume", "state-done", "break", "idle-warning"]
        .map((id) => [id, document.getElementById(id)]));
    this.players = [...root.querySelectorAll("video.clip")].map((video) => new SpanPlayer(video));
    this.controls = new PlayerControls(root.querySelector("[data-player-controls]"));
    this.state = "loading";
    this.armedAt = 0;
    this.gate = "wait"; // wait: no answer yet | limited: only 3 and 4 (the clip fails or stalls) | all
    this.gateTimer = 0;
    this.cueTimer = 0;
    this.answerStartedAt = null;
    this.awaitingFeedback = null; // client id of the training answer whose feedback is shown next
    this.progress = null;
    this.lockName = `rejudge.judge.${root.dataset.user}.${this.poolId}`;
    this.waitForTab = null; // aborts the queued lock request of a tab waiting for the other to close
    this.lastActivity = performance.now();
    this.idleTimer = 0;
    this.slots = this.makeSlots();
    this.progressTimer = 0;
    this.armTimer = 0;
    this.timings = [];
    this.undo = new Undo({ poolId: this.poolId, outbox: this.outbox, cue: (text) => this.showCue(text),
      onOpen: () => this.setUndoOpen(true), onClose: () => this.setUndoOpen(false) });
    window.rejudgeTimings = this.timings; // submit-to-next-clip times, read by the latency benchmark
  }

  makeSlots() {
    return new WorkSlots({
      nextUrl: `/api/v1/pools/${this.poolId}/next/`,
      heartbeatUrl: (leaseId) => `/api/v1/leases/${leaseId}/heartbeat/`,
      workId: (assignment) => assignment.item_id,
      itemWorkId: (item) => item.meta.itemId,
      ownItem: (item) => this.isMine(item),
      outbox: this.outbox,
      players: this.players,
      onShow: (slot) => this.show(slot),
      onState: (state) => this.setState(STATES[state] ? state : "no_work_left"),
      onLeaseLost: () => this.leaseLost(),
    });
  }

  isMine(item) {
    return item.meta && item.meta.kind === "label" && item.meta.poolId === this.poolId;
  }

  myItems() {
    return this.outbox.items((item) => this.isMine(item));
  }

  start() {
    showSaveStatus(this.el["save-status"], this.outbox);
    this.outbox.addEventListener("acked", (event) => this.onAcked(event.detail));
    this.outbox.addEventListener("refused", (event) => {
      this.onRefused(event.detail);
      this.onAcked(event.detail);
    });
    this.outbox.addEventListener("change", () => this.onConnectionChange());
    for (const player of this.players) player.addEventListener("failed", () => this.onClipFailed(player));
    document.addEventListener("keydown", (event) => this.onKey(event));
    this.el.answers.addEventListener("click", (event) => {
      const button = event.target.closest("button[data-value]");
      if (button) this.choose(button.dataset.value, { viaClick: true });
    });
    this.el["comment-form"].addEventListener("submit", (event) => {
      event.preventDefault();
      const comment = this.el.comment.value.trim();
      if (!comment) {
        // The guidelines ask why a pair is ambiguous: the admin who settles it needs the reason.
        this.showCue("Write a few words on why you cannot decide; the admin who settles the pair needs them.");
        this.el.comment.setAttribute("aria-invalid", "true");
        this.el.comment.focus();
        return;
      }
      this.el.comment.removeAttribute("aria-invalid");
      this.answer("ambiguous", comment);
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
    this.el["state-retry"].addEventListener("click", () => this.slots.refill());
    this.el["state-take"].addEventListener("click", () => this.takeOver());
    this.el["state-resume"].addEventListener("click", () => this.resume());
    this.el.break.addEventListener("click", () => this.takeBreak("asked"));
    for (const type of ["keydown", "pointerdown", "wheel", "touchstart"]) {
      document.addEventListener(type, () => this.noteActivity(), { capture: true, passive: true });
    }
    this.idleTimer = setInterval(() => this.checkIdle(), 1000);
    this.el["guidelines-open"].addEventListener("click", () => this.toggleGuidelines());
    this.setState("loading");
    this.refreshProgress();
    this.claimTab();
  }

  /* ---- one tab per pool ------------------------------------------------------------------ */

  claimTab() {
    if (!navigator.locks) {
      this.slots.start();
      return;
    }
    this.requestTab({ ifAvailable: true });
  }

  /* A lock request that, once granted, judges here until the tab closes or another steals it. */
  requestTab(options) {
    let granted = false;
    return navigator.locks.request(this.lockName, options, (lock) => {
      if (!lock) {
        this.elsewhere();
        return null;
      }
      granted = true;
      return this.holdTab();
    }).catch((error) => {
      if (granted) this.movedAway(); // stolen: the request of the holder rejects
      // Locks denied with storage (a cross-site iframe, e.g. an MTurk HIT): judge without one.
      else if (error.name === "SecurityError") this.slots.start();
      else if (error.name !== "AbortError") throw error; // aborted while queued: we took over
    });
  }

  /* Another tab judges this pool: say so, and take over by ourselves once it closes. */
  elsewhere() {
    this.setState("other_tab");
    this.waitForTab = new AbortController();
    this.requestTab({ signal: this.waitForTab.signal });
  }

  takeOver() {
    this.waitForTab?.abort();
    this.waitForTab = null;
    this.requestTab({ steal: true });
  }

  /* Runs while this tab holds the lock; the promise never settles, so the lock is held until the
     tab closes or another tab steals it. */
  holdTab() {
    this.waitForTab = null;
    this.slots.stop();
    this.slots = this.makeSlots(); // answers the other tab left in the outbox count as sent
    this.setState("loading");
    this.slots.start();
    return new Promise(() => {});
  }

  /* ---- breaks --------------------------------------------------------------------------- */

  noteActivity() {
    this.lastActivity = performance.now();
    if (!this.el["idle-warning"].hidden) this.el["idle-warning"].hidden = true;
  }

  holdsWork() {
    return this.state === "working" || this.state === "comment" || this.state === "feedback";
  }

  checkIdle() {
    const warning = this.el["idle-warning"];
    if (!this.holdsWork()) {
      warning.hidden = true;
      return;
    }
    const limit = Number(this.slots.idleReleaseSeconds) || IDLE_DEFAULT_SECONDS;
    const left = Math.ceil(limit - (performance.now() - this.lastActivity) / 1000);
    if (left <= 0) {
      warning.hidden = true;
      this.takeBreak("idle");
    } else if (left <= Math.min(IDLE_WARN_MAX_SECONDS, limit / 2)) {
      const clock = `${Math.floor(left / 60)}:${String(left % 60).padStart(2, "0")}`;
      warning.textContent = `Still there? Your pairs go back to the pool in ${clock}. Press any key to keep them.`;
      warning.hidden = false;
    }
  }

  async takeBreak(reason) {
    if (!this.holdsWork() && this.state !== "loading") return;
    const slots = this.slots;
    this.slots = this.makeSlots(); // not started until the rater resumes
    this.slots.idleReleaseSeconds = slots.idleReleaseSeconds;
    this.breakReason = reason;
    this.setState("break");
    await slots.release((leaseId) => `/api/v1/leases/${leaseId}/release/`);
  }

  resume() {
    if (this.state !== "break") return;
    this.noteActivity();
    this.setState("loading");
    this.slots.start();
  }

  /* Another tab took the work over: stop at once; it resumes the leases held here. */
  movedAway() {
    this.slots.stop();
    this.setState("moved_away");
  }

  onRefused({ item, status, data }) {
    if (!this.isMine(item)) return;
    const value = VALUE_NAMES[item.body.value] || item.body.value;
    const why = (data && data.detail) || `HTTP ${status}`;
    this.el.notice.hidden = false;
    this.el.notice.dataset.kind = "refused";
    this.el.notice.textContent = `An answer was not stored (${value}): ${why}.`;
  }

  /* While the undo panel plays the answered clip, the pair on screen waits out of view, paused
     (two clips at once would leave the rater unsure which one the new answer is about). */
  setUndoOpen(open) {
    const player = this.slots.current?.player;
    if (open) {
      this.resumeAfterUndo = Boolean(player?.wantPlaying);
      player?.pause();
      this.root.dataset.undo = "open";
    } else {
      delete this.root.dataset.undo;
      if (this.resumeAfterUndo && this.holdsWork()) player?.play();
    }
  }

  /* ---- showing a pair ------------------------------------------------------------------- */

  show(slot) {
    this.controls.attach(slot.player);
    slot.player.play();
    this.el.caption.textContent = slot.assignment.caption.text;
    this.el["clip-error"].hidden = !slot.player.failed;
    this.root.dataset.pairId = String(slot.workId);
    this.root.dataset.leaseId = String(slot.leaseId);
    this.root.dataset.mode = slot.assignment.mode;
    if (this.el.notice.dataset.kind !== "refused") this.el.notice.hidden = true; // a refusal stays in view
    this.closeComment({ focus: false });
    this.el.feedback.hidden = true;
    this.el.answers.hidden = false;
    slot.shownAt = performance.now();
    this.showCue("");
    this.gate = null;
    this.arm();
    this.setState("working");
    this.renderTraining();
    this.updateGate();
    this.measureSwap(slot);
  }

  /* Submit-to-next-clip time: from the key press to the first paint with the new clip's frame. */
  measureSwap(slot) {
    const startedAt = this.answerStartedAt;
    this.answerStartedAt = null;
    if (startedAt == null) return;
    const record = () => requestAnimationFrame(() => {
      const elapsed = performance.now() - startedAt;
      this.timings.push({ pairId: slot.workId, ms: elapsed, preloaded: slot.wasPreloaded, startedAt });
      performance.measure("rejudge:next-clip", { start: startedAt, end: performance.now() });
    });
    if (slot.player.ready) requestAnimationFrame(record);
    else slot.player.video.addEventListener("loadeddata", record, { once: true });
  }

  setState(state) {
    this.state = state;
    this.root.dataset.state = state;
    const working = state === "working" || state === "comment" || state === "feedback";
    this.el.work.hidden = !working;
    this.el.state.hidden = working;
    // The banner numbers the pair on screen: with none on screen (a failed training, a break) it goes.
    if (!working) this.el["training-banner"].hidden = true;
    if (!working) {
      const [title, stateText] = STATES[state] || STATES.loading;
      const text = state === "break" ? BREAK_TEXT[this.breakReason] || BREAK_TEXT.asked
        : state === "training_failed" ? this.trainingFailedText() : stateText;
      this.el["state-title"].textContent = title;
      this.el["state-text"].textContent = text;
      this.el["state-retry"].hidden = state === "loading" || state === "no_access" || TAKE_OVER_STATES.has(state);
      this.el["state-take"].hidden = !TAKE_OVER_STATES.has(state);
      this.el["state-retry"].hidden ||= state === "break" || state === "quota_reached";
      this.el["state-resume"].hidden = state !== "break";
      // A crowd study's page says where its completion page is; the quota is met, so it is next.
      const doneUrl = this.root.dataset.doneUrl;
      this.el["state-done"].hidden = !(state === "quota_reached" && doneUrl);
      if (doneUrl) this.el["state-done"].href = doneUrl;
      if (state === "break") this.el["state-resume"].focus({ preventScroll: true });
      for (const player of this.players) player.pause();
    }
  }

  /* The score and the pass mark, once the page knows them (it asks again if not yet). */
  trainingFailedText() {
    const training = this.progress?.training;
    if (!training || training.score == null || training.pass_mark == null) {
      this.failedTextAsks = (this.failedTextAsks || 0) + 1;
      if (this.failedTextAsks <= 3) this.refreshProgressSoon();
      return STATES.training_failed[1];
    }
    const percent = (share) => `${Math.round(share * 100)}%`;
    return `You scored ${percent(training.score)} in the training; the pass mark is ${percent(training.pass_mark)}. `
      + "Ask an admin to let you take the training again.";
  }

  /* Answers (and Continue) count only ARM_DELAY_MS after what they answer appeared. data-armed
     says that the page takes an answer now (tests and the benchmark wait for it). */
  arm() {
    this.armedAt = performance.now() + ARM_DELAY_MS;
    this.root.dataset.armed = "false";
    clearTimeout(this.armTimer);
    this.armTimer = setTimeout(() => this.renderArmed(), ARM_DELAY_MS);
  }

  renderArmed() {
    const open = performance.now() >= this.armedAt && (this.state === "feedback" || (this.gate && this.gate !== "wait"));
    this.root.dataset.armed = String(open);
  }

  minWatch(slot) {
    const seconds = Number(slot?.assignment.min_watch_seconds);
    return Number.isFinite(seconds) && seconds > 0 ? seconds : 0;
  }

  /* Which answers the pair on screen takes now, checked every GATE_TICK_MS while it shows. */
  updateGate() {
    clearTimeout(this.gateTimer);
    const slot = this.slots.current;
    if (!slot || this.state === "feedback") return;
    const player = slot.player;
    const need = this.minWatch(slot);
    const sinceShown = performance.now() - slot.shownAt;
    const slow = !player.failed && !player.ready && sinceShown >= SLOW_LOAD_MS;
    const stalled = player.ready && player.watched < need && player.stuckFor(STALL_MS);
    let gate = "wait";
    if (player.watched >= need) gate = "all";
    else if (player.failed || slow || stalled) gate = "limited";
    if (gate !== this.gate) {
      this.gate = gate;
      this.root.dataset.gate = gate;
      for (const button of this.el.answers.querySelectorAll("button[data-value]")) {
        button.disabled = gate === "wait" || (gate === "limited" && VOTES.has(button.dataset.value));
      }
      this.renderArmed();
    }
    const loading = this.el["clip-loading"];
    loading.hidden = player.failed || (player.ready && !stalled);
    loading.dataset.slow = String(slow || stalled);
    const loadingText = stalled ? "The clip has stalled. If it does not go on, press 4 (doesn't play) or 3 (ambiguous)."
      : slow ? "This clip is slow to load. If it does not start, press 4 (doesn't play) or 3 (ambiguous)."
        : "Loading the clip…";
    if (loading.textContent !== loadingText) loading.textContent = loadingText;
    const hint = this.el["answer-hint"];
    hint.hidden = gate === "all";
    const hintText = gate === "limited" ? "Relevant and not relevant open once the clip has played."
      : !player.wantPlaying && player.ready ? `Play the clip: answers open after ${need.toFixed(1)} s of it.`
        : `Answers open after ${need.toFixed(1)} s of the clip (${Math.max(0, need - player.watched).toFixed(1)} s to go).`;
    if (hint.textContent !== hintText) hint.textContent = hintText;
    if (gate !== "all" || !loading.hidden) this.gateTimer = setTimeout(() => this.updateGate(), GATE_TICK_MS);
  }

  /* A key or click that is not taken says why, where the answers are. */
  showCue(text) {
    clearTimeout(this.cueTimer);
    this.el["key-cue"].textContent = text;
    if (text) this.cueTimer = setTimeout(() => { this.el["key-cue"].textContent = ""; }, 3000);
  }

  /* Whether the answer `value` is taken now; if not, the cue says why. */
  accepts(value) {
    if (performance.now() < this.armedAt) {
      this.showCue("That key came just as a new pair appeared, so it was not taken. Press it again for this pair.");
      return false;
    }
    const gate = this.gate || "wait";
    if (gate === "all" || (gate === "limited" && !VOTES.has(value))) return true;
    const player = this.slots.current?.player;
    const left = Math.max(0, this.minWatch(this.slots.current) - (player ? player.watched : 0));
    this.showCue(gate === "limited"
      ? "This clip does not play: press 4 (doesn't play) or 3 (ambiguous)."
      : `Watch the clip first: answers open after it has played ${left.toFixed(1)} s more.`);
    return false;
  }

  onClipFailed(player) {
    if (this.slots.current && this.slots.current.player === player) this.el["clip-error"].hidden = false;
  }

  /* ---- answering ------------------------------------------------------------------------ */

  choose(value, { viaClick = false } = {}) {
    if (this.state !== "working") return;
    if (viaClick) this.el.work.focus({ preventScroll: true }); // so Space plays, not re-presses the button
    if (!this.accepts(value)) return;
    if (value === "ambiguous") this.openComment();
    else this.answer(value);
  }

  answer(value, comment = "") {
    const slot = this.slots.current;
    if (!slot || slot.answered || (this.state !== "working" && this.state !== "comment")) return;
    if (!this.accepts(value)) return;
    slot.answered = true;
    clearTimeout(this.gateTimer);
    this.answerStartedAt = performance.now();
    const clientId = newClientId();
    this.outbox.add({
      clientId,
      url: "/api/v1/labels/",
      body: { client_id: clientId, lease_id: slot.leaseId, value, seconds: Math.round((performance.now() - slot.shownAt) / 10) / 100, comment },
      meta: { kind: "label", poolId: this.poolId, itemId: slot.workId, leaseId: slot.leaseId, mode: slot.assignment.mode },
    });
    this.undo.answered({ itemId: slot.workId, caption: slot.assignment.caption.text, clip: slot.assignment.clip, value,
      mode: slot.assignment.mode });
    this.slots.sent(slot);
    // For counters outside this module (a crowd study's quota): counted now, not when the server says.
    this.root.dispatchEvent(new CustomEvent("judge:answered", { detail: { mode: slot.assignment.mode } }));
    this.renderProgress();
    if (slot.assignment.mode === "training") this.awaitFeedback(clientId, value);
    else this.slots.advance();
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
    this.slots.current.player.pause();
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
    this.answerStartedAt = performance.now(); // the swap is timed from Continue, not from the answer read about
    this.slots.advance();
  }

  onAcked({ item, status, data }) {
    if (!item.meta || item.meta.poolId !== this.poolId) return;
    this.root.dispatchEvent(new CustomEvent("judge:saved", { detail: { mode: item.meta.mode } }));
    if (item.clientId === this.awaitingFeedback) this.showFeedback(status < 300 && data ? data.feedback : null);
    this.refreshProgressSoon();
  }

  onConnectionChange() {
    this.renderProgress();
    if (this.state === "feedback" && this.el["feedback-continue"].disabled && this.outbox.connection !== "online") {
      // Feedback needs the server; the answer itself is safe, so the rater need not wait.
      this.el["feedback-title"].textContent = "Answer kept on this device";
      this.el["feedback-answer"].textContent = "The right answer shows once the server has it; you can go on meanwhile.";
      this.el["feedback-continue"].disabled = false;
    }
  }

  leaseLost() {
    this.el.notice.hidden = false;
    this.el.notice.dataset.kind = "lease";
    this.el.notice.textContent = "Your hold on this pair ran out. Answer anyway: your answer is saved.";
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
      this.el.notice.dataset.kind = "training";
      this.el.notice.textContent = `Training passed (score ${Math.round((this.progress.training.score || 0) * 100)}%). From now on your answers count.`;
    }
    this.renderProgress();
    this.renderTraining();
    if (this.state === "training_failed") this.el["state-text"].textContent = this.trainingFailedText();
  }

  renderProgress() {
    if (!this.progress || !this.el.today) return; // a crowd worker's page shows the study's quota instead
    // Training answers are not the pool's labels: the server leaves them out of both figures
    // (selectors/pools.py PRODUCTION_ROLES), and so do the answers still waiting here.
    const waiting = this.myItems().filter((item) => item.meta.mode !== "training").length;
    this.el.today.textContent = String(this.progress.labelled_today + waiting);
    // Answers still in the outbox are no longer left for this rater either.
    const left = Math.max(0, this.progress.left_for_you - waiting);
    this.el.left.textContent = left.toLocaleString();
    const bar = this.el["pool-progress"];
    const judged = this.progress.labelled_total + waiting;
    bar.value = judged + left ? Math.max(0, Math.min(1, judged / (judged + left))) : 0;
    bar.setAttribute("aria-valuetext", `${Math.round(bar.value * 100)}% of your pairs judged`);
    bar.title = `${Math.round(bar.value * 100)}% of your pairs judged`;
  }

  /* The banner numbers the training pair on screen. It is fixed once, while the pair waits for
     its answer: counted afterwards (answered on the server plus waiting in the outbox), the
     answer just given would make the pair whose feedback shows read as the next one. */
  renderTraining() {
    const banner = this.el["training-banner"];
    const training = this.progress?.training;
    const slot = this.slots.current;
    const onScreen = this.state === "working" || this.state === "comment" || this.state === "feedback";
    if (slot?.assignment.mode === "training" && onScreen) {
      if (training && slot.trainingNumber == null) {
        const given = training.answered + this.myItems().length;
        slot.trainingNumber = Math.min(training.total, slot.answered ? Math.max(1, given) : given + 1);
      }
      banner.hidden = false;
      // The second sentence is for a wide screen; a phone keeps the line for the clip.
      const why = Object.assign(document.createElement("span"), { className: "wide-only",
        textContent: " After each answer you see the right one and why." });
      banner.replaceChildren(training ? `Training: pair ${slot.trainingNumber} of ${training.total}.` : "Training.", why);
    } else {
      banner.hidden = true;
    }
  }

  /* ---- keyboard ------------------------------------------------------------------------- */

  toggleGuidelines() {
    toggleGuidelines(this.el.guidelines);
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
    if (this.undo.onKey(event)) return; // Backspace / Z, and keys while an undo panel has them
    const onButton = target.closest && target.closest("button, a");
    const key = event.key;
    if (event.repeat && (key in KEY_VALUES || key === "Enter")) {
      event.preventDefault(); // a held key answers once
      return;
    }
    if (this.state === "feedback") {
      // Space and R work on the clip here as everywhere, even with Continue focused; Enter goes on.
      const player = this.slots.current?.player;
      if (key === "Enter" && !onButton) {
        event.preventDefault();
        this.continueAfterFeedback();
      } else if (key === " ") {
        event.preventDefault();
        player?.toggle();
      } else if (key === "r" || key === "R") {
        event.preventDefault();
        player?.replay();
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
    const player = this.slots.current?.player;
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
