/* Keeping leases alive while a page shows (or preloads) the work they hold. */
import { api } from "./api.js";

const MIN_MS = 1000;
const MAX_MS = 60000;

/* Renew a lease when a third of its time is left. Time left is measured on the server's clock
   (its Date header), so a wrong clock on the rater's computer cannot let leases lapse. */
export function heartbeatDelay(expiresAt, response) {
  const serverNow = Date.parse(response.headers.get("Date") || "") || Date.now();
  const left = Date.parse(expiresAt) - serverNow;
  return Math.min(MAX_MS, Math.max(MIN_MS, left / 3));
}

/* Renews the leases of `slots()` (objects with leaseId, answered, leaseGone) and calls
   `onGone(slot, body)` for a lease that has ended (410, with state and still_needed). */
export class Heartbeat {
  constructor({ url, slots, onGone }) {
    this.url = url;
    this.slots = slots;
    this.onGone = onGone;
    this.timer = 0;
    this.due = 0;
  }

  stop() {
    this.stopped = true;
    clearTimeout(this.timer);
    this.timer = 0;
  }

  /* Beat within `ms` (an earlier beat already due stays). */
  within(ms) {
    if (this.stopped) return;
    const due = Date.now() + ms;
    if (this.timer && this.due <= due) return;
    clearTimeout(this.timer);
    this.due = due;
    this.timer = setTimeout(() => {
      this.timer = 0;
      this.beat();
    }, ms);
  }

  async beat() {
    if (this.stopped) return;
    let nextMs = MAX_MS;
    for (const slot of this.slots()) {
      if (!slot || slot.answered || slot.leaseGone) continue;
      let response;
      try {
        response = await api(this.url(slot.leaseId), { method: "POST", json: {} });
      } catch {
        nextMs = Math.min(nextMs, 5000);
        continue;
      }
      if (response.ok) nextMs = Math.min(nextMs, heartbeatDelay(response.data.expires_at, response));
      else if (response.status === 410 || response.status === 404) {
        slot.leaseGone = true;
        this.onGone(slot, response.data || {});
      }
    }
    this.within(nextMs);
  }
}
