/* Taking back answers on the judging screen.

   Undo (Backspace, Z or the Undo button) reopens the last answer: its clip plays again with its
   caption (the pair on screen waits, paused and out of view, so the rater sees what the answer
   was about, not the next clip) and the rater answers it anew with any answer (1-4; 3 asks for a
   comment), which replaces the stored answer on the server (POST my/answers/{item}/change/; the
   server keeps the old one in its audit trail). An answer still waiting in the outbox is sent
   first, so the server always changes a stored answer and the change is recorded like any other.
   After a reload the page no longer remembers its last answer, so it asks the server for the
   rater's newest one (my/recent-answers/). "My recent answers" lists the last answers of this
   pool with a change control on those that can still change, and says why for the others.

   Training answers never change (their right answer was shown). The server decides the rest (a
   report already uses the answer, an admin has the pair, the clip was not watched long enough
   for a vote) and the page shows its reason. */
import { api, errorText } from "./api.js";
import { SpanPlayer } from "./player.js";

const NAMES = { relevant: "Relevant", not_relevant: "Not relevant", ambiguous: "Ambiguous", broken: "Clip doesn't play" };
const WHY_NOT = {
  training_answer: "Training answer: its right answer was shown, so it stays.",
  used_by_report: "A report already uses this answer.",
  closed: "This pair has gone to an admin.",
};
const UNDO_KEYS = { 1: "relevant", 2: "not_relevant", 3: "ambiguous", 4: "broken" };

export class Undo {
  constructor({ poolId, outbox, cue, onOpen = () => {}, onClose = () => {} }) {
    this.poolId = poolId;
    this.outbox = outbox;
    this.cue = cue;
    this.onOpen = onOpen;
    this.onClose = onClose;
    this.last = null; // {itemId, caption, clip, value, mode, whyNot}
    this.opening = false;
    this.el = Object.fromEntries(["undo", "undo-panel", "undo-caption", "undo-was", "undo-status", "undo-close",
      "undo-video", "undo-comment-form", "undo-comment", "undo-comment-cancel",
      "recent-open", "recent-panel", "recent", "recent-status", "recent-close"].map((id) => [id, document.getElementById(id)]));
    this.player = new SpanPlayer(this.el["undo-video"]);
    this.el.undo.addEventListener("click", () => this.open());
    this.el["undo-close"].addEventListener("click", () => this.close());
    this.el["undo-panel"].addEventListener("click", (event) => {
      const button = event.target.closest("button[data-undo-value]");
      if (button) this.choose(button.dataset.undoValue);
    });
    this.el["undo-comment-form"].addEventListener("submit", (event) => {
      event.preventDefault();
      const comment = this.el["undo-comment"].value.trim();
      if (!comment) {
        this.el["undo-status"].textContent = "Write a few words on why you cannot decide; the admin who settles the pair needs them.";
        this.el["undo-comment"].setAttribute("aria-invalid", "true");
        return;
      }
      this.el["undo-comment"].removeAttribute("aria-invalid");
      this.changeLast("ambiguous", comment);
    });
    // The page ignores keys typed into a text field, so the comment's own keys are handled here.
    this.el["undo-comment"].addEventListener("keydown", (event) => {
      if (event.key === "Enter" && !event.shiftKey) {
        event.preventDefault();
        this.el["undo-comment-form"].requestSubmit();
      } else if (event.key === "Escape") {
        event.preventDefault();
        event.stopPropagation();
        this.closeComment();
      }
    });
    this.el["undo-comment-cancel"].addEventListener("click", () => this.closeComment());
    this.el["recent-open"].addEventListener("click", () => this.toggleRecent());
    this.el["recent-close"].addEventListener("click", () => this.toggleRecent(false));
    this.el.recent.addEventListener("click", (event) => {
      const button = event.target.closest("button[data-undo-value]");
      if (button) this.changeListed(button.closest("li"), button.dataset.undoValue);
    });
  }

  get isOpen() {
    return !this.el["undo-panel"].hidden;
  }

  /* The page's last answer (called as it is queued). */
  answered({ itemId, caption, clip, value, mode }) {
    this.last = { itemId, caption, clip, value, mode, whyNot: null };
  }

  /* Keys while a panel has them: true when the key was handled (the page then ignores it). */
  onKey(event) {
    const key = event.key;
    if (this.isOpen) {
      const onButton = event.target.closest && event.target.closest("button");
      if (key === "Escape") this.close();
      else if (key in UNDO_KEYS && !event.repeat) this.choose(UNDO_KEYS[key]);
      // Space and R work on the clip in view, not on the pair waiting underneath.
      else if (key === " " && !onButton) this.player.toggle();
      else if (key === "r" || key === "R") this.player.replay();
      else if (key === "Tab" || key === "Enter" || key === " ") return false; // focus moves, buttons press
      event.preventDefault();
      return true;
    }
    if (!this.el["recent-panel"].hidden && event.target.closest && event.target.closest("#recent-panel")) {
      if (key === "Escape") {
        event.preventDefault();
        this.toggleRecent(false);
      }
      return true; // answer keys do not reach the pair on screen from inside the list
    }
    if (key === "Backspace" || key === "z" || key === "Z") {
      event.preventDefault();
      this.open();
      return true;
    }
    return false;
  }

  async open() {
    if (this.opening || this.isOpen) return;
    this.opening = true;
    try {
      const last = this.last || await this.fetchLast();
      if (!last) {
        this.cue("There is no answer to take back yet.");
        return;
      }
      if (last.mode === "training") {
        this.cue("Training answers cannot be taken back: their right answer was shown.");
        return;
      }
      if (last.whyNot) {
        this.cue(`Your last answer cannot be changed now. ${WHY_NOT[last.whyNot] || ""}`);
        return;
      }
      const panel = this.el["undo-panel"];
      panel.dataset.result = "";
      this.el["undo-caption"].textContent = last.caption;
      this.el["undo-was"].textContent = `You answered: ${NAMES[last.value] || last.value}. Answer it anew:`;
      this.el["undo-status"].textContent = "";
      this.closeComment({ focus: false });
      this.renderPressed(panel, last.value);
      this.onOpen();
      panel.hidden = false;
      this.el.undo.setAttribute("aria-expanded", "true");
      if (last.clip) {
        this.player.load(last.clip);
        this.player.play();
      }
      panel.focus({ preventScroll: true });
      panel.scrollIntoView({ block: "nearest" });
    } finally {
      this.opening = false;
    }
  }

  /* The rater's newest answer in this pool as the server has it (after a reload). */
  async fetchLast() {
    let reply;
    try {
      await this.sendPending();
      reply = await api(`/api/v1/my/recent-answers/?pool=${this.poolId}`);
    } catch {
      return null;
    }
    if (!reply.ok || !reply.data.length || this.last) return this.last;
    const answer = reply.data[0];
    this.last = {
      itemId: answer.item_id, caption: answer.caption, clip: answer.clip, value: answer.value,
      mode: answer.why_not === "training_answer" ? "training" : "production", whyNot: answer.can_change ? null : answer.why_not,
    };
    return this.last;
  }

  close() {
    if (this.el["undo-panel"].hidden) return;
    this.player.pause();
    this.el["undo-panel"].hidden = true;
    this.el.undo.setAttribute("aria-expanded", "false");
    this.onClose();
    document.getElementById("work")?.focus({ preventScroll: true });
  }

  /* 3 asks for the comment first, as on the pair itself; the other answers go at once. */
  choose(value) {
    if (value === "ambiguous") this.openComment();
    else this.changeLast(value);
  }

  openComment() {
    this.el["undo-comment-form"].hidden = false;
    this.el["undo-comment"].value = this.last && this.last.value === "ambiguous" ? this.last.comment || "" : "";
    this.el["undo-comment"].focus();
  }

  closeComment({ focus = true } = {}) {
    this.el["undo-comment-form"].hidden = true;
    if (focus) this.el["undo-panel"].focus({ preventScroll: true });
  }

  renderPressed(container, value) {
    for (const button of container.querySelectorAll("button[data-undo-value]")) {
      button.setAttribute("aria-pressed", String(button.dataset.undoValue === value));
    }
  }

  /* Sends what is waiting first, so the change applies to a stored answer. */
  async sendPending() {
    if (this.outbox.items((item) => item.meta && item.meta.kind === "label").length) await this.outbox.flush();
  }

  /* An ambiguous answer carries its reason; any other answer drops the old one. */
  async change(itemId, value, comment = "") {
    await this.sendPending();
    return api(`/api/v1/my/answers/${encodeURIComponent(itemId)}/change/`, { method: "POST", json: { value, comment } });
  }

  async changeLast(value, comment = "") {
    const last = this.last;
    const panel = this.el["undo-panel"];
    const status = this.el["undo-status"];
    if (!last || panel.dataset.busy === "true") return;
    if (value === last.value && value !== "ambiguous") {
      status.textContent = `${NAMES[value]} is the answer you gave: nothing to change.`;
      return;
    }
    panel.dataset.busy = "true";
    status.textContent = "Saving your new answer…";
    try {
      const { ok, data } = await this.change(last.itemId, value, comment);
      if (ok) {
        last.value = data.value;
        last.comment = data.comment;
        this.closeComment({ focus: false });
        this.renderPressed(panel, data.value);
        panel.dataset.result = "changed";
        status.textContent = `Changed to ${NAMES[data.value]}. Press Esc to go on.`;
      } else {
        panel.dataset.result = "refused";
        status.textContent = `Not changed: ${WHY_NOT[data && data.code] || errorText(data)}`;
      }
    } catch {
      panel.dataset.result = "refused";
      status.textContent = "Not changed: the server could not be reached. Try again in a moment.";
    } finally {
      panel.dataset.busy = "false";
    }
  }

  async toggleRecent(show = this.el["recent-panel"].hidden) {
    const panel = this.el["recent-panel"];
    panel.hidden = !show;
    this.el["recent-open"].setAttribute("aria-expanded", String(show));
    if (!show) {
      this.el["recent-open"].focus({ preventScroll: true });
      return;
    }
    this.el["recent-status"].textContent = "Loading…";
    this.el.recent.replaceChildren();
    await this.sendPending();
    let reply;
    try {
      reply = await api(`/api/v1/my/recent-answers/?pool=${this.poolId}`);
    } catch {
      this.el["recent-status"].textContent = "The server could not be reached.";
      return;
    }
    if (!reply.ok) {
      this.el["recent-status"].textContent = errorText(reply.data);
      return;
    }
    this.el["recent-status"].textContent = reply.data.length ? "" : "No answers in this pool yet.";
    this.el.recent.replaceChildren(...reply.data.map((answer) => this.row(answer)));
    panel.focus({ preventScroll: true });
  }

  row(answer) {
    const li = document.createElement("li");
    li.dataset.item = answer.item_id;
    li.dataset.canChange = String(answer.can_change);
    const caption = document.createElement("q");
    caption.textContent = answer.caption;
    const when = new Date(answer.changed_at || answer.answered_at);
    const meta = document.createElement("span");
    meta.className = "muted";
    meta.textContent = ` ${answer.changed_at ? "changed" : "answered"} ${when.toLocaleTimeString()}`;
    li.append(caption, meta);
    if (answer.can_change) {
      const group = document.createElement("div");
      group.className = "row";
      group.setAttribute("role", "group");
      group.setAttribute("aria-label", `Your answer to “${answer.caption}”`);
      for (const value of ["relevant", "not_relevant", "ambiguous", "broken"]) {
        const button = document.createElement("button");
        button.type = "button";
        button.dataset.undoValue = value;
        button.textContent = value === "ambiguous" ? "Ambiguous…" : NAMES[value];
        group.append(button);
      }
      this.renderPressed(group, answer.value);
      const status = document.createElement("span");
      status.className = "recent-row-status";
      status.setAttribute("role", "status");
      li.append(group, status);
    } else {
      const fixed = document.createElement("p");
      fixed.className = "muted";
      fixed.textContent = `${NAMES[answer.value] || answer.value}. ${WHY_NOT[answer.why_not] || ""}`;
      li.append(fixed);
    }
    return li;
  }

  /* An ambiguous answer needs its reason: the row asks for it before sending. */
  askListedComment(li) {
    let form = li.querySelector("form");
    if (!form) {
      form = document.createElement("form");
      form.className = "row recent-comment";
      const label = document.createElement("label");
      label.textContent = "Why can't you decide?";
      const input = document.createElement("input");
      input.type = "text";
      input.maxLength = 5000;
      input.required = true;
      label.append(input);
      const send = document.createElement("button");
      send.type = "submit";
      send.textContent = "Send as ambiguous";
      form.append(label, send);
      form.addEventListener("submit", (event) => {
        event.preventDefault();
        const comment = input.value.trim();
        if (comment) this.changeListed(li, "ambiguous", comment);
      });
      li.querySelector(".recent-row-status").before(form);
    }
    form.querySelector("input").focus();
  }

  async changeListed(li, value, comment = "") {
    const pressed = li.querySelector("button[aria-pressed=true]");
    if (!li || (pressed && pressed.dataset.undoValue === value && value !== "ambiguous")) return;
    if (value === "ambiguous" && !comment) {
      this.askListedComment(li);
      return;
    }
    const status = li.querySelector(".recent-row-status");
    status.textContent = "Saving…";
    try {
      const { ok, data } = await this.change(li.dataset.item, value, comment);
      if (ok) {
        li.querySelector("form")?.remove();
        this.renderPressed(li, data.value);
        status.textContent = `Changed to ${NAMES[data.value]}.`;
        if (this.last && this.last.itemId === li.dataset.item) this.last.value = data.value;
      } else {
        status.textContent = `Not changed: ${WHY_NOT[data && data.code] || errorText(data)}`;
      }
    } catch {
      status.textContent = "Not changed: the server could not be reached.";
    }
  }
}
