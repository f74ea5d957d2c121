/* The two leases a rater screen holds: the work on screen and the next one, whose clip is already
   loading in the other <video>, so that an answer can swap them at once.

   Work answered here, or still in the outbox from an earlier visit, is never shown again, and its
   lease (live on the server until the answer lands) is excluded when asking for more; otherwise
   the server would hand the same work back. */
import { api, NetworkError, newClientId } from "./api.js";
import { Heartbeat, heartbeatDelay } from "./leases.js";
import { storage } from "./safe_storage.js";

const MAX_EXCLUDE = 10; // what the API accepts
const MAX_ASKS = 6; // per refill, so that work handed back while its answers are on their way cannot loop
const POLL_IDLE_MS = 30000; // no work / paused: look again this often
const POLL_BUSY_MS = 3000; // waiting for our own answers to land
const WAITING_FOR_US = new Set(["holding_max", "training_pending"]);
// Once the outbox gets through again, so will a request for work: no need to wait for the timer.
const CONNECTION_TROUBLE = new Set(["offline", "signed_out", "server_error"]);

/* This browser's id, sent with every ask: the server hands a device back only the leases it holds
   itself, so the same account on another device (another browser) gets other pairs. Tabs of one
   browser share it: between them the one-tab lock and the take-over decide. */
const DEVICE_KEY = "rejudge.device";

function deviceId() {
  let id = storage.getItem(DEVICE_KEY);
  if (!id) {
    id = newClientId();
    storage.setItem(DEVICE_KEY, id);
  }
  return id;
}

class Slot {
  constructor(assignment, workId, player) {
    this.assignment = assignment;
    this.workId = workId;
    this.player = player;
    this.answered = false;
    this.leaseGone = false;
    this.shownAt = 0;
    this.wasPreloaded = false;
  }

  get leaseId() {
    return this.assignment.lease_id;
  }
}

export class WorkSlots {
  /* nextUrl: where to POST {exclude} for the next assignment; heartbeatUrl(leaseId).
     workId(assignment): the pair or task it leases. ownItem(item) picks this screen's answers from
     the outbox, itemWorkId(item) their work id (their meta also carries the leaseId).
     pollWhileShowing: ask for a next assignment every POLL_IDLE_MS even while work is on screen.
     onShow(slot): the slot has become `current` and its video the visible one.
     onState(state): the screen shows this state instead of work: "loading", "offline",
     "signed_out", "server_error", "no_access" or the server's reason for having none.
     onLeaseLost(gone): the lease of the work on screen has ended (gone: the 410 body). */
  constructor({ nextUrl, heartbeatUrl, workId, itemWorkId, ownItem, outbox, players, pollWhileShowing = false, onShow, onState, onLeaseLost }) {
    Object.assign(this, { nextUrl, workId, itemWorkId, ownItem, outbox, players, pollWhileShowing, onShow, onState, onLeaseLost });
    this.current = null;
    this.preloaded = null;
    this.stateShown = null;
    this.sentWork = new Set();
    this.heldForSent = new Map(); // lease id -> work id
    for (const item of this.sentItems()) {
      this.sentWork.add(itemWorkId(item));
      this.heldForSent.set(item.meta.leaseId, itemWorkId(item));
    }
    this.refilling = null;
    this.refillAgain = false;
    this.stopped = false;
    this.retryTimer = 0;
    this.heartbeat = new Heartbeat({
      url: heartbeatUrl,
      slots: () => [this.current, this.preloaded],
      onGone: (slot, gone) => this.leaseEnded(slot, gone),
    });
  }

  sentItems() {
    return this.outbox.items(this.ownItem);
  }

  start() {
    this.outbox.addEventListener("acked", (event) => !this.stopped && this.landed(event.detail.item));
    this.outbox.addEventListener("refused", (event) => !this.stopped && this.landed(event.detail.item));
    this.outbox.addEventListener("change", () => {
      if (!this.stopped && this.outbox.connection === "online" && CONNECTION_TROUBLE.has(this.stateShown)) this.refill();
    });
    document.addEventListener("visibilitychange", () => {
      if (!this.stopped && document.visibilityState === "visible") {
        this.heartbeat.beat();
        this.refill();
      }
    });
    // Answers left from an earlier visit go first, so that their leases are done before we ask.
    const flushed = this.sentItems().length ? this.outbox.flush() : Promise.resolve();
    flushed.finally(() => this.refill());
  }

  /* This screen stops working (another tab took over, or the rater is on a break): no more asks,
     no heartbeats, nothing shown. The leases stay as they are; `release()` gives them back. */
  stop() {
    this.stopped = true;
    clearTimeout(this.retryTimer);
    this.heartbeat.stop();
    for (const slot of [this.current, this.preloaded]) if (slot) slot.player.pause();
    this.current = null;
    this.preloaded = null;
  }

  /* The unanswered leases on screen and preloaded, given back to the pool. */
  async release(releaseUrl) {
    const slots = [this.current, this.preloaded].filter((slot) => slot && !slot.answered && !slot.leaseGone);
    this.stop();
    await Promise.all(slots.map((slot) => api(releaseUrl(slot.leaseId), { method: "POST", json: {} }).catch(() => null)));
    return slots.length;
  }

  /* Call once the answer for `slot` is safe in the outbox. */
  sent(slot) {
    this.sentWork.add(slot.workId);
    this.heldForSent.set(slot.leaseId, slot.workId);
  }

  /* The preloaded work takes the screen before anything is asked of the server, so that the swap
     never waits for the network. */
  advance() {
    const next = this.preloaded;
    this.preloaded = null;
    if (this.current) this.current.player.pause();
    this.current = null;
    if (next) {
      next.wasPreloaded = true;
      this.show(next);
    } else {
      this.showState("loading");
    }
    this.refill();
  }

  landed(item) {
    if (!this.ownItem(item)) return;
    const workId = this.itemWorkId(item);
    for (const [leaseId, sentWorkId] of this.heldForSent) if (sentWorkId === workId) this.heldForSent.delete(leaseId);
    if (!this.current || !this.preloaded) this.refill();
  }

  excludedLeases() {
    const ids = [this.current?.leaseId, this.preloaded?.leaseId, ...[...this.heldForSent.keys()].reverse()];
    return [...new Set(ids.filter((id) => id != null))].slice(0, MAX_EXCLUDE);
  }

  refill() {
    if (this.stopped) return Promise.resolve();
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
    for (let attempt = 0; attempt < MAX_ASKS && (!this.current || !this.preloaded); attempt += 1) {
      let response;
      try {
        response = await api(this.nextUrl, { method: "POST", json: { exclude: this.excludedLeases(), device: deviceId() } });
      } catch (error) {
        if (!(error instanceof NetworkError)) throw error;
        this.outbox.setConnection("offline");
        if (!this.current) this.showState("offline");
        this.retryIn(POLL_BUSY_MS);
        return;
      }
      if (response.status === 404) return this.showState("no_access");
      if (response.status === 401 || response.status === 403) {
        this.outbox.setConnection("signed_out");
        if (!this.current) this.showState("signed_out");
        return this.retryIn(POLL_IDLE_MS);
      }
      if (!response.ok) {
        if (!this.current) this.showState("server_error");
        return this.retryIn(POLL_BUSY_MS * 2);
      }
      if (this.stopped) return;
      const { assignment, reason } = response.data;
      if (response.data.idle_release_seconds != null) this.idleReleaseSeconds = response.data.idle_release_seconds;
      if (!assignment) return this.noAssignment(reason);
      const workId = this.workId(assignment);
      if (this.sentWork.has(workId)) {
        // Work whose answer is still on its way: the lease ends when the answer lands.
        this.heldForSent.set(assignment.lease_id, workId);
        continue;
      }
      if (this.current?.leaseId === assignment.lease_id || this.preloaded?.leaseId === assignment.lease_id) continue;
      const slot = new Slot(assignment, workId, this.freePlayer());
      slot.player.load(assignment.clip);
      this.heartbeat.within(heartbeatDelay(assignment.expires_at, response));
      if (!this.current) this.show(slot);
      else this.preloaded = slot;
    }
    if (!this.current) this.retryIn(POLL_BUSY_MS); // only work whose answers are still on their way came back
  }

  freePlayer() {
    const busy = new Set([this.current?.player, this.preloaded?.player]);
    return this.players.find((player) => !busy.has(player)) || this.players[0];
  }

  noAssignment(reason) {
    if (!this.current) this.showState(reason);
    const waitingForUs = WAITING_FOR_US.has(reason);
    if (waitingForUs || !this.current || this.pollWhileShowing) this.retryIn(waitingForUs ? POLL_BUSY_MS : POLL_IDLE_MS);
  }

  retryIn(ms) {
    clearTimeout(this.retryTimer);
    if (this.stopped) return;
    this.retryTimer = setTimeout(() => this.refill(), ms);
  }

  show(slot) {
    this.current = slot;
    this.stateShown = null;
    for (const player of this.players) {
      const active = player === slot.player;
      player.video.classList.toggle("active", active);
      player.video.setAttribute("aria-hidden", String(!active));
      if (!active) player.pause();
    }
    this.onShow(slot);
  }

  showState(state) {
    this.stateShown = state;
    this.onState(state);
  }

  leaseEnded(slot, gone) {
    if (slot === this.preloaded) {
      // Not shown yet: take fresh work instead of work that others may now be doing.
      this.preloaded = null;
      this.refill();
    } else if (slot === this.current) {
      this.onLeaseLost(gone);
    }
  }
}
