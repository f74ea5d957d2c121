/* Answers the server has not acknowledged yet.

   Each answer is written to localStorage before the page moves on (one key per answer, so two
   tabs never overwrite each other), and removed only when the server has acknowledged it. The
   answer's client id makes a resend harmless: the server returns the stored answer instead of
   storing a second one. So an answer survives a dropped connection, a server restart, an expired
   session and a closed tab, and still lands exactly once.

   Events: "change" (pending answers or connection state changed), "acked" {item, status, data},
   "refused" {item, status, data}. */
import { api, NetworkError } from "./api.js";
import { storage } from "./safe_storage.js";

const RETRY_MIN_MS = 1000;
const RETRY_MAX_MS = 15000;

export class Outbox extends EventTarget {
  constructor(userId) {
    super();
    this.prefix = `rejudge.outbox.${userId}.`;
    this.refusedPrefix = `rejudge.refused.${userId}.`;
    this.connection = navigator.onLine ? "online" : "offline"; // online | offline | signed_out | server_error
    this.retryDelay = RETRY_MIN_MS;
    this.retryTimer = 0;
    this.flushing = null;
    addEventListener("online", () => this.flushSoon(0));
    addEventListener("offline", () => this.setConnection("offline"));
    // Another tab added or sent answers.
    addEventListener("storage", (event) => {
      if (event.key === null || event.key.startsWith(this.prefix)) this.changed();
    });
    document.addEventListener("visibilitychange", () => {
      if (document.visibilityState === "visible" && this.items().length) this.flushSoon(0);
    });
  }

  items(filter = () => true) {
    const found = [];
    for (let i = 0; i < storage.length; i += 1) {
      const key = storage.key(i);
      if (!key || !key.startsWith(this.prefix)) continue;
      try {
        const item = JSON.parse(storage.getItem(key));
        if (item && filter(item)) found.push(item);
      } catch {
        /* a foreign or damaged entry: leave it alone */
      }
    }
    return found.sort((a, b) => a.queuedAt - b.queuedAt);
  }

  refused() {
    const found = [];
    for (let i = 0; i < storage.length; i += 1) {
      const key = storage.key(i);
      if (key && key.startsWith(this.refusedPrefix)) {
        try {
          found.push(JSON.parse(storage.getItem(key)));
        } catch {
          /* ignore */
        }
      }
    }
    return found;
  }

  /* Stores the answer synchronously (it is safe once this returns), then sends it. */
  add(item) {
    const stored = { ...item, queuedAt: item.queuedAt ?? Date.now() };
    storage.setItem(this.prefix + stored.clientId, JSON.stringify(stored));
    this.changed();
    this.flushSoon(0);
    return stored;
  }

  get pending() {
    return this.items().length;
  }

  setConnection(state) {
    if (this.connection !== state) {
      this.connection = state;
      this.changed();
    }
  }

  changed() {
    this.dispatchEvent(new Event("change"));
  }

  flushSoon(delayMs) {
    clearTimeout(this.retryTimer);
    this.retryTimer = setTimeout(() => this.flush(), delayMs);
  }

  scheduleRetry() {
    this.flushSoon(this.retryDelay);
    this.retryDelay = Math.min(RETRY_MAX_MS, this.retryDelay * 2);
  }

  /* Sends every pending answer, oldest first. Resolves true when none is left. */
  flush() {
    if (!this.flushing) {
      const run = () => this.sendAll();
      // One tab at a time sends (a second sender would only get replays back).
      const locked = navigator.locks
        ? navigator.locks.request(`${this.prefix}flush`, run).catch((error) => {
          // Locks denied with storage (a cross-site iframe, e.g. an MTurk HIT): send unlocked.
          if (error.name === "SecurityError") return run();
          throw error;
        })
        : run();
      this.flushing = locked.finally(() => {
        this.flushing = null;
      });
    }
    return this.flushing;
  }

  async sendAll() {
    // Read the oldest answer afresh each time: answers added while sending go out in this pass.
    for (let item = this.items()[0]; item; item = this.items()[0]) {
      let response;
      try {
        response = await api(item.url, { method: "POST", json: item.body });
      } catch (error) {
        if (!(error instanceof NetworkError)) throw error;
        this.setConnection("offline");
        this.scheduleRetry();
        return false;
      }
      const { status, data } = response;
      if (status === 409 && data && data.code === "too_soon") {
        // The server wants the clip watched longer than its lease has existed (the page holds
        // answers until then, so only a wrong clock gets here): the same answer goes again then.
        this.flushSoon(Math.max(250, Math.ceil(Number(data.seconds_left || 1) * 1000) + 100));
        return false;
      }
      if (status === 200 || status === 201) {
        // A resend of an answer already stored comes back 200 with that answer. A 409 is not
        // "saved": the pair has another answer of ours, or was given back; that goes to refused.
        storage.removeItem(this.prefix + item.clientId);
        this.dispatchEvent(new CustomEvent("acked", { detail: { item, status, data } }));
        continue;
      }
      if (status === 401 || (status === 403 && !(data && data.code))) {
        this.setConnection("signed_out"); // keep the answer until the rater logs in again
        this.scheduleRetry();
        return false;
      }
      if (status >= 500 || status === 408 || status === 429) {
        this.setConnection("server_error");
        this.scheduleRetry();
        return false;
      }
      // The server will never take this answer as it is: keep it aside where it stays visible.
      storage.setItem(this.refusedPrefix + item.clientId, JSON.stringify({ ...item, status, response: data }));
      storage.removeItem(this.prefix + item.clientId);
      this.dispatchEvent(new CustomEvent("refused", { detail: { item, status, data } }));
    }
    this.retryDelay = RETRY_MIN_MS;
    this.setConnection("online");
    this.changed();
    return true;
  }
}
