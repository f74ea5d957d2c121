/* localStorage, or a stand-in that lives as long as the page where the browser denies it: in a
   cross-site iframe (an MTurk HIT) a browser blocking third-party storage throws on the first
   touch of localStorage, and the judging page would never start. Answers then survive a lost
   connection (the outbox retries) but not a closed tab. */
function memoryStorage() {
  const items = new Map();
  return {
    get length() { return items.size; },
    key: (i) => [...items.keys()][i] ?? null,
    getItem: (key) => (items.has(key) ? items.get(key) : null),
    setItem: (key, value) => { items.set(key, String(value)); },
    removeItem: (key) => { items.delete(key); },
  };
}

function pick() {
  try {
    const probe = "rejudge.storage-probe";
    window.localStorage.setItem(probe, "1");
    window.localStorage.removeItem(probe);
    return window.localStorage;
  } catch {
    return memoryStorage();
  }
}

export const storage = pick();
