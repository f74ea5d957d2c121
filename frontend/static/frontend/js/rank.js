/* The ranking screen: one clip, five captions to put in order by drag and drop or from the keyboard.

   Like the judging screen, it holds the task on screen and the next one (its clip preloading in
   a second <video>), and sends each ordering through the outbox, so none is lost.

   Enter on an order nobody has moved asks first ("Submit this order as it is?"): the shown order
   is a shuffle, and one stray key must not send it as a judgement. "None of these fits" (N) gives
   the task back; the page then lists that lease when asking for work, so the server does not hand
   the same five captions straight back. The skip itself is stored nowhere: a "none fits" verdict
   would need a field on the submission. */
import { api, newClientId } from "./api.js";
import { toggleGuidelines } from "./guidelines.js";
import { Outbox } from "./outbox.js";
import { PlayerControls, SpanPlayer } from "./player.js";
import { showSaveStatus } from "./status.js";
import { WorkSlots } from "./work_slots.js";

const ARM_DELAY_MS = 300;
const MAX_EXCLUDE = 50; // RANKING_EXCLUDE_MAX in api/views/ranking.py
const STATES = {
  loading: ["Loading the next clip…", ""],
  no_work_left: ["No work left", "Every task of this study that you may do has its orderings. Thank you!"],
  paused: ["Your work is paused", "An admin has paused your account. Your orderings so far are saved."],
  holding_max: ["Waiting for the server…", "The next clip comes as soon as your last orderings have landed."],
  offline: ["You are offline", "Your orderings are kept on this device. The next clip loads when the connection returns."],
  signed_out: ["Signed out", "Your session has ended. Log in again: the orderings on this device are sent then."],
  no_access: ["No access to this study", "This study does not exist, or you are not one of its raters."],
  server_error: ["The server has a problem", "Trying again in a few seconds."],
};

/* WorkSlots, plus the leases given back with "none of these fits" in `exclude`, newest first so
   that a full list forgets the oldest skip. */
class RankSlots extends WorkSlots {
  constructor(options) {
    super(options);
    this.passedLeases = [];
  }

  excludedLeases() {
    return [...new Set([...super.excludedLeases(), ...[...this.passedLeases].reverse()])].slice(0, MAX_EXCLUDE);
  }
}

class RankPage {
  constructor(root) {
    this.root = root;
    this.studyId = Number(root.dataset.study);
    this.outbox = new Outbox(root.dataset.user);
    this.el = Object.fromEntries(
      ["work", "ranking", "submit-order", "announce", "state", "state-title", "state-text", "state-retry", "done", "notice",
        "clip-error", "guidelines", "guidelines-open", "save-status", "study-name", "total", "left", "none-fits",
        "confirm-untouched", "confirm-submit", "confirm-cancel"]
        .map((id) => [id, document.getElementById(id)]));
    this.players = [...root.querySelectorAll("video.clip")].map((video) => new SpanPlayer(video));
    this.controls = new PlayerControls(root.querySelector("[data-player-controls]"));
    this.state = "loading";
    this.armedAt = 0;
    this.doneCount = 0;
    this.sentHere = new Set(); // client ids of orderings made on this page: counted once acknowledged
    this.mine = null; // {submitted, left} from the server
    this.totalsTimer = 0;
    this.touched = false;
    this.dragged = null;
    this.slots = new RankSlots({
      nextUrl: `/api/v1/ranking-studies/${this.studyId}/next/`,
      heartbeatUrl: (leaseId) => `/api/v1/ranking-leases/${leaseId}/heartbeat/`,
      workId: (assignment) => assignment.item_id,
      itemWorkId: (item) => item.meta.itemId,
      ownItem: (item) => item.meta && item.meta.kind === "ranking" && item.meta.studyId === this.studyId,
      outbox: this.outbox,
      players: this.players,
      // Ordering five captions takes a while: a task freed meanwhile is worth preloading.
      pollWhileShowing: true,
      onShow: (slot) => this.show(slot),
      onState: (state) => this.setState(STATES[state] ? state : "no_work_left"),
      onLeaseLost: () => {
        this.el.notice.hidden = false;
        this.el.notice.textContent = "Your hold on this clip ran out. Submit anyway: your order is saved.";
      },
    });
  }

  start() {
    showSaveStatus(this.el["save-status"], this.outbox);
    for (const player of this.players) {
      player.addEventListener("failed", () => {
        if (this.slots.current?.player === player) this.el["clip-error"].hidden = false;
      });
    }
    document.addEventListener("keydown", (event) => this.onKey(event));
    this.el["submit-order"].addEventListener("click", () => this.submit({ confirmed: true }));
    this.el["none-fits"].addEventListener("click", () => this.skip());
    this.el["confirm-submit"].addEventListener("click", () => this.submit({ confirmed: true }));
    this.el["confirm-cancel"].addEventListener("click", () => this.cancelConfirm());
    const ownItem = (item) => item.meta && item.meta.kind === "ranking" && item.meta.studyId === this.studyId;
    this.outbox.addEventListener("acked", (event) => {
      const item = event.detail.item;
      if (!ownItem(item)) return;
      if (this.sentHere.delete(item.clientId)) {
        this.doneCount += 1;
        this.el.done.textContent = String(this.doneCount);
      }
      this.refreshTotalsSoon();
    });
    this.outbox.addEventListener("refused", (event) => {
      if (!ownItem(event.detail.item)) return;
      this.sentHere.delete(event.detail.item.clientId);
      this.refreshTotalsSoon();
    });
    this.outbox.addEventListener("change", () => this.renderTotals());
    this.el["state-retry"].addEventListener("click", () => this.slots.refill());
    this.el["guidelines-open"].addEventListener("click", () => this.toggleGuidelines());
    this.bindDragAndDrop();
    this.el.ranking.addEventListener("click", (event) => {
      const button = event.target.closest("button[data-move]");
      if (!button) return;
      const item = button.closest("li");
      this.move(item, this.indexOf(item) + Number(button.dataset.move));
    });
    this.refreshTotals();
    this.setState("loading");
    this.slots.start();
  }

  /* The study's name and the rater's totals in it (orderings in all, tasks left). */
  async refreshTotals() {
    try {
      const response = await api("/api/v1/my/ranking-studies/");
      const study = response.ok && response.data.find((s) => s.id === this.studyId);
      if (study) {
        this.el["study-name"].textContent = `${study.name} · ${study.dataset}`;
        document.title = `${study.name} · Order captions · Rejudge`;
        this.mine = { submitted: study.submitted, left: study.left };
        this.renderTotals();
      }
    } catch {
      /* names and totals are a nicety; the work goes on without them */
    }
  }

  refreshTotalsSoon() {
    clearTimeout(this.totalsTimer);
    this.totalsTimer = setTimeout(() => this.refreshTotals(), 250);
  }

  renderTotals() {
    if (!this.mine) return;
    // Orderings still in the outbox count already: they are safe on this device.
    const waiting = this.outbox.items((item) => item.meta && item.meta.kind === "ranking" && item.meta.studyId === this.studyId).length;
    this.el.total.textContent = (this.mine.submitted + waiting).toLocaleString();
    this.el.left.textContent = Math.max(0, this.mine.left - waiting).toLocaleString();
  }

  /* ---- showing a task ------------------------------------------------------------------- */

  show(slot) {
    this.controls.attach(slot.player);
    slot.player.play();
    this.el["clip-error"].hidden = !slot.player.failed;
    this.el.notice.hidden = true;
    this.hideConfirm();
    this.touched = false;
    this.renderCaptions(slot.assignment.captions);
    this.root.dataset.taskId = slot.assignment.item_id;
    slot.shownAt = performance.now();
    this.armedAt = slot.shownAt + ARM_DELAY_MS;
    this.root.dataset.armed = "false";
    setTimeout(() => {
      if (this.slots.current === slot) this.root.dataset.armed = "true";
    }, ARM_DELAY_MS);
    this.setState("working");
    this.el.ranking.querySelector("li").focus({ preventScroll: true });
  }

  renderCaptions(captions) {
    const list = this.el.ranking;
    list.replaceChildren(...captions.map((caption) => {
      const item = document.createElement("li");
      item.className = "rank-item";
      item.draggable = true;
      item.tabIndex = 0;
      item.dataset.captionId = String(caption.id);
      const text = Object.assign(document.createElement("span"), { className: "text", textContent: caption.text });
      const moves = Object.assign(document.createElement("span"), { className: "moves" });
      for (const [label, delta, symbol] of [["Move up", -1, "▲"], ["Move down", 1, "▼"]]) {
        const button = Object.assign(document.createElement("button"), { type: "button", textContent: symbol, tabIndex: -1 });
        button.dataset.move = String(delta);
        button.setAttribute("aria-label", `${label}: ${caption.text}`);
        moves.append(button);
      }
      item.append(text, moves);
      return item;
    }));
    this.labelItems();
  }

  items() {
    return [...this.el.ranking.children];
  }

  indexOf(item) {
    return this.items().indexOf(item);
  }

  labelItems() {
    const items = this.items();
    items.forEach((item, index) => {
      item.setAttribute("aria-label", `Place ${index + 1} of ${items.length}: ${item.querySelector(".text").textContent}`);
    });
    this.root.dataset.order = items.map((item) => item.dataset.captionId).join(",");
  }

  move(item, toIndex) {
    const items = this.items();
    const from = items.indexOf(item);
    const to = Math.max(0, Math.min(items.length - 1, toIndex));
    if (from < 0 || from === to) return;
    const rest = items.filter((other) => other !== item);
    rest.splice(to, 0, item);
    this.el.ranking.replaceChildren(...rest);
    this.touched = true;
    this.hideConfirm();
    this.labelItems();
    item.focus({ preventScroll: true });
    this.el.announce.textContent = `Moved to place ${to + 1} of ${items.length}: ${item.querySelector(".text").textContent}`;
  }

  bindDragAndDrop() {
    const list = this.el.ranking;
    const clearMarks = () => list.querySelectorAll(".drop-before, .drop-after").forEach((el) => el.classList.remove("drop-before", "drop-after"));
    const dropPlace = (event) => {
      const over = event.target.closest("li");
      if (!over || over === this.dragged) return null;
      const box = over.getBoundingClientRect();
      return { over, after: event.clientY > box.top + box.height / 2 };
    };
    list.addEventListener("dragstart", (event) => {
      const item = event.target.closest("li");
      if (!item || this.state !== "working") return;
      this.dragged = item;
      item.classList.add("dragging");
      event.dataTransfer.effectAllowed = "move";
      event.dataTransfer.setData("text/plain", item.dataset.captionId);
    });
    list.addEventListener("dragover", (event) => {
      if (!this.dragged) return;
      event.preventDefault();
      clearMarks();
      const place = dropPlace(event);
      if (place) place.over.classList.add(place.after ? "drop-after" : "drop-before");
    });
    list.addEventListener("drop", (event) => {
      if (!this.dragged) return;
      event.preventDefault();
      const place = dropPlace(event);
      clearMarks();
      if (!place) return;
      const items = this.items().filter((item) => item !== this.dragged);
      const target = items.indexOf(place.over) + (place.after ? 1 : 0);
      this.move(this.dragged, target);
    });
    list.addEventListener("dragend", () => {
      this.dragged?.classList.remove("dragging");
      this.dragged = null;
      clearMarks();
    });
  }

  setState(state) {
    this.state = state;
    this.root.dataset.state = state;
    const working = state === "working";
    this.el.work.hidden = !working;
    this.el.state.hidden = working;
    if (!working) {
      this.hideConfirm();
      const [title, text] = STATES[state] || STATES.loading;
      this.el["state-title"].textContent = title;
      this.el["state-text"].textContent = state === "no_work_left" && this.slots.passedLeases.length
        ? `${text} The clips you skipped as "none fits" went to the other raters; reload the page to see them again.`
        : text;
      this.el["state-retry"].hidden = state === "loading" || state === "no_access";
      for (const player of this.players) player.pause();
    }
  }

  /* ---- submitting ----------------------------------------------------------------------- */

  ready() {
    const slot = this.slots.current;
    return slot && !slot.answered && this.state === "working" && performance.now() >= this.armedAt ? slot : null;
  }

  /* confirmed: the rater clicked a submit button, or answered "as it is?" (Enter on an untouched
     order only asks). */
  submit({ confirmed = false } = {}) {
    const slot = this.ready();
    if (!slot) return;
    if (!confirmed && !this.touched) {
      this.askConfirm();
      return;
    }
    this.hideConfirm();
    slot.answered = true;
    const clientId = newClientId();
    this.sentHere.add(clientId);
    const order = this.items().map((item) => Number(item.dataset.captionId));
    this.outbox.add({
      clientId,
      url: "/api/v1/ranking-submissions/",
      body: { client_id: clientId, lease_id: slot.leaseId, order, seconds: Math.round((performance.now() - slot.shownAt) / 10) / 100 },
      meta: { kind: "ranking", studyId: this.studyId, itemId: slot.workId, leaseId: slot.leaseId },
    });
    this.slots.sent(slot);
    this.slots.advance();
  }

  askConfirm() {
    this.el["confirm-untouched"].hidden = false;
    this.el["confirm-submit"].focus({ preventScroll: false });
  }

  confirming() {
    return !this.el["confirm-untouched"].hidden;
  }

  hideConfirm() {
    this.el["confirm-untouched"].hidden = true;
  }

  cancelConfirm() {
    this.hideConfirm();
    this.items()[0]?.focus({ preventScroll: true });
  }

  /* "None of these fits": the task goes back to the pool for the others; this rater is not
     offered it again on this page (its lease is listed in `exclude`). */
  skip() {
    const slot = this.ready();
    if (!slot) return;
    slot.answered = true;
    this.hideConfirm();
    this.slots.passedLeases.push(slot.leaseId);
    // Until the release lands, the lease still counts as held; ask again once it has.
    api(`/api/v1/ranking-leases/${slot.leaseId}/release/`, { method: "POST", json: {} })
      .catch(() => null) // offline: the lease runs out by itself
      .finally(() => this.slots.refill());
    this.slots.advance();
    this.el.announce.textContent = "Skipped: none of these fits. The clip goes back to the other raters.";
  }

  /* ---- keyboard ------------------------------------------------------------------------- */

  toggleGuidelines() {
    toggleGuidelines(this.el.guidelines);
  }

  onKey(event) {
    if (event.ctrlKey || event.metaKey || event.defaultPrevented) return;
    if (this.el.guidelines.open) {
      if (event.key === "g" || event.key === "G") {
        event.preventDefault();
        this.el.guidelines.close();
      }
      return;
    }
    const target = event.target;
    if (target.closest && target.closest("textarea, input:not([type=range]), select, [contenteditable]")) return;
    const key = event.key;
    if ((key === "g" || key === "G" || key === "?") && !event.altKey) {
      event.preventDefault();
      this.toggleGuidelines();
      return;
    }
    if (this.state !== "working") return;
    if (this.confirming()) {
      // Only the answer to "as it is?" now: a digit or arrow here would move a caption unseen.
      if (key === "Escape") {
        event.preventDefault();
        this.cancelConfirm();
      } else if (key === "Enter" && !(target.closest && target.closest("button, a"))) {
        event.preventDefault();
        if (!event.repeat) this.submit({ confirmed: true });
      }
      return;
    }
    const focused = target.closest && target.closest("#ranking > li");
    const selected = focused || this.items()[0];
    if (key === "ArrowUp" || key === "ArrowDown") {
      if (target.matches && target.matches("input[type=range]")) return;
      event.preventDefault();
      const delta = key === "ArrowUp" ? -1 : 1;
      if (event.shiftKey || event.altKey) this.move(selected, this.indexOf(selected) + delta);
      else this.items()[Math.max(0, Math.min(this.items().length - 1, this.indexOf(selected) + delta))]?.focus();
      return;
    }
    if (/^[1-9]$/.test(key) && Number(key) <= this.items().length && !event.altKey) {
      event.preventDefault();
      this.move(selected, Number(key) - 1);
      return;
    }
    if (event.altKey) return;
    const onButton = target.closest && target.closest("button, a");
    const player = this.slots.current?.player;
    switch (key) {
      case "Enter":
        if (onButton) return;
        event.preventDefault();
        if (!event.repeat) this.submit();
        break;
      case " ":
        if (onButton) return;
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
        if (target.matches && target.matches("input[type=range]")) return;
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
      case "n":
      case "N":
        event.preventDefault();
        if (!event.repeat) this.skip();
        break;
      default:
    }
  }
}

const root = document.getElementById("rank");
if (root) new RankPage(root).start();
