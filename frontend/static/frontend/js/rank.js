/* The ranking screen: one clip, five captions to put in order by drag and drop or from the keyboard.

   Like the judging screen, it holds the task on screen and the next one (its clip preloading in
   a second <video>), and sends each ordering through the outbox, so none is lost. */
import { api, newClientId } from "./api.js";
import { Outbox } from "./outbox.js";
import { PlayerControls, SpanPlayer } from "./player.js";
import { showSaveStatus } from "./status.js";
import { WorkSlots } from "./work_slots.js";

const ARM_DELAY_MS = 300;
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

class RankPage {
  constructor(root) {
    this.root = root;
    this.studyId = Number(root.dataset.study);
    this.outbox = new Outbox(root.dataset.user);
    this.el = Object.fromEntries(
      ["work", "ranking", "submit-order", "announce", "state", "state-title", "state-text", "state-retry", "done", "notice",
        "clip-error", "guidelines", "guidelines-open", "save-status", "study-name"]
        .map((id) => [id, document.getElementById(id)]));
    this.players = [...root.querySelectorAll("video.clip")].map((video) => new SpanPlayer(video));
    this.controls = new PlayerControls(root.querySelector("[data-player-controls]"));
    this.state = "loading";
    this.armedAt = 0;
    this.doneCount = 0;
    this.dragged = null;
    this.slots = new WorkSlots({
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
    this.el["submit-order"].addEventListener("click", () => this.submit());
    this.el["state-retry"].addEventListener("click", () => this.slots.refill());
    this.el["guidelines-open"].addEventListener("click", () => this.toggleGuidelines());
    this.bindDragAndDrop();
    this.el.ranking.addEventListener("click", (event) => {
      const button = event.target.closest("button[data-move]");
      if (!button) return;
      const item = button.closest("li");
      this.move(item, this.indexOf(item) + Number(button.dataset.move));
    });
    this.loadStudyName();
    this.setState("loading");
    this.slots.start();
  }

  async loadStudyName() {
    try {
      const response = await api("/api/v1/my/ranking-studies/");
      const study = response.ok && response.data.find((s) => s.id === this.studyId);
      if (study) {
        this.el["study-name"].textContent = `${study.name} · ${study.dataset}`;
        document.title = `${study.name} · Order captions · Rejudge`;
      }
    } catch {
      /* the name is a nicety; the work goes on without it */
    }
  }

  /* ---- showing a task ------------------------------------------------------------------- */

  show(slot) {
    this.controls.attach(slot.player);
    slot.player.play();
    this.el["clip-error"].hidden = !slot.player.failed;
    this.el.notice.hidden = true;
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
      const [title, text] = STATES[state] || STATES.loading;
      this.el["state-title"].textContent = title;
      this.el["state-text"].textContent = text;
      this.el["state-retry"].hidden = state === "loading" || state === "no_access";
      for (const player of this.players) player.pause();
    }
  }

  /* ---- submitting ----------------------------------------------------------------------- */

  submit() {
    const slot = this.slots.current;
    if (!slot || slot.answered || this.state !== "working" || performance.now() < this.armedAt) return;
    slot.answered = true;
    const clientId = newClientId();
    const order = this.items().map((item) => Number(item.dataset.captionId));
    this.outbox.add({
      clientId,
      url: "/api/v1/ranking-submissions/",
      body: { client_id: clientId, lease_id: slot.leaseId, order, seconds: Math.round((performance.now() - slot.shownAt) / 10) / 100 },
      meta: { kind: "ranking", studyId: this.studyId, itemId: slot.workId, leaseId: slot.leaseId },
    });
    this.slots.sent(slot);
    this.doneCount += 1;
    this.el.done.textContent = String(this.doneCount);
    this.slots.advance();
  }

  /* ---- keyboard ------------------------------------------------------------------------- */

  toggleGuidelines() {
    const dialog = this.el.guidelines;
    if (dialog.open) dialog.close();
    else dialog.showModal();
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
      default:
    }
  }
}

const root = document.getElementById("rank");
if (root) new RankPage(root).start();
