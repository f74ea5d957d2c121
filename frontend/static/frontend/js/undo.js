/* Taking back answers on the judging screen.

   Undo (Backspace, Z or the Undo button) reopens the last answer: its caption shows again and
   the rater answers it anew (1 or 2), which replaces the stored answer on the server
   (POST my/answers/{item}/change/; the server keeps the old one in its audit trail). An answer
   still waiting in the outbox is sent first, so the server always changes a stored answer and the
   change is recorded like any other. "My recent answers" lists the last answers of this pool with
   a change control on those that can still change, and says why for the others.

   Only relevant / not relevant can be changed, into one of the two; training answers never (their
   right answer was shown). The server decides the rest (a report already uses the answer, an
   admin has the pair) and the page shows its reason. */
import { api, errorText } from "./api.js";

const NAMES = { relevant: "Relevant", not_relevant: "Not relevant", ambiguous: "Ambiguous", broken: "Clip doesn't play" };
const WHY_NOT = {
  training_answer: "Training answer: its right answer was shown, so it stays.",
  used_by_report: "A report already uses this answer.",
  not_a_vote: "Only relevant / not relevant answers can be changed.",
  closed: "This pair has gone to an admin.",
};
const UNDO_KEYS = { 1: "relevant", 2: "not_relevant" };

export class Undo {
  constructor({ poolId, outbox, cue }) {
    this.poolId = poolId;
    this.outbox = outbox;
    this.cue = cue;
    this.last = null; // {itemId, caption, value, mode}
    this.el = Object.fromEntries(["undo", "undo-panel", "undo-caption", "undo-was", "undo-status", "undo-close",
      "recent-open", "recent-panel", "recent", "recent-status", "recent-close"].map((id) => [id, document.getElementById(id)]));
    this.el.undo.addEventListener("click", () => this.open());
    this.el["undo-close"].addEventListener("click", () => this.close());
    this.el["undo-panel"].addEventListener("click", (event) => {
      const button = event.target.closest("button[data-undo-value]");
      if (button) this.changeLast(button.dataset.undoValue);
    });
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
  answered({ itemId, caption, value, mode }) {
    this.last = { itemId, caption, value, mode };
  }

  /* Keys while a panel has them: true when the key was handled (the page then ignores it). */
  onKey(event) {
    const key = event.key;
    if (this.isOpen) {
      if (key === "Escape") this.close();
      else if (key in UNDO_KEYS && !event.repeat) this.changeLast(UNDO_KEYS[key]);
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

  open() {
    const last = this.last;
    if (!last) {
      this.cue("There is no answer to take back yet.");
      return;
    }
    if (last.mode === "training") {
      this.cue("Training answers cannot be taken back: their right answer was shown.");
      return;
    }
    const panel = this.el["undo-panel"];
    panel.dataset.result = "";
    this.el["undo-caption"].textContent = last.caption;
    this.el["undo-was"].textContent = `You answered: ${NAMES[last.value] || last.value}. Answer it anew:`;
    this.el["undo-status"].textContent = "";
    this.renderPressed(panel, last.value);
    panel.hidden = false;
    this.el.undo.setAttribute("aria-expanded", "true");
    panel.focus({ preventScroll: true });
  }

  close() {
    this.el["undo-panel"].hidden = true;
    this.el.undo.setAttribute("aria-expanded", "false");
    document.getElementById("work")?.focus({ preventScroll: true });
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

  async change(itemId, value) {
    await this.sendPending();
    return api(`/api/v1/my/answers/${encodeURIComponent(itemId)}/change/`, { method: "POST", json: { value } });
  }

  async changeLast(value) {
    const last = this.last;
    const panel = this.el["undo-panel"];
    const status = this.el["undo-status"];
    if (!last || panel.dataset.busy === "true") return;
    if (value === last.value && panel.dataset.result !== "changed") {
      status.textContent = `${NAMES[value]} is the answer you gave: nothing to change.`;
      return;
    }
    panel.dataset.busy = "true";
    status.textContent = "Saving your new answer…";
    try {
      const { ok, data } = await this.change(last.itemId, value);
      if (ok) {
        last.value = data.value;
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
      for (const value of ["relevant", "not_relevant"]) {
        const button = document.createElement("button");
        button.type = "button";
        button.dataset.undoValue = value;
        button.textContent = NAMES[value];
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

  async changeListed(li, value) {
    const pressed = li.querySelector("button[aria-pressed=true]");
    if (!li || (pressed && pressed.dataset.undoValue === value)) return;
    const status = li.querySelector(".recent-row-status");
    status.textContent = "Saving…";
    try {
      const { ok, data } = await this.change(li.dataset.item, value);
      if (ok) {
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
