/* Calls to the REST API with the session cookie and the CSRF token Django expects. */

export class NetworkError extends Error {
  constructor(message) {
    super(message);
    this.name = "NetworkError";
  }
}

export function csrfToken() {
  const match = document.cookie.match(/(?:^|;\s*)csrftoken=([^;]+)/);
  return match ? decodeURIComponent(match[1]) : "";
}

/* An MTurk worker in MTurk's iframe gets no cookie: their study page gives its signed worker
   token, sent as the Authorization header (the server accepts it on that study's work only). */
const studyWorkerToken = document.querySelector('meta[name="study-worker-token"]')?.content || "";

/* A clip URL of this site with the worker token (a <video> sends no Authorization header). */
export function withStudyWorkerToken(url) {
  if (!studyWorkerToken) return url;
  const parsed = new URL(url, window.location.href);
  if (parsed.origin !== window.location.origin) return url; // a signed URL of the store
  parsed.searchParams.set("wt", studyWorkerToken);
  return parsed.pathname + parsed.search;
}

/* Resolves to {status, ok, data, headers} for every HTTP answer (errors included); rejects with
   NetworkError only when no answer came back (offline, connection cut, server down). */
export async function api(url, { method = "GET", json, form, signal } = {}) {
  const headers = { Accept: "application/json" };
  let body;
  if (json !== undefined) {
    headers["Content-Type"] = "application/json";
    body = JSON.stringify(json);
  } else if (form !== undefined) {
    body = form;
  }
  if (method !== "GET" && method !== "HEAD") headers["X-CSRFToken"] = csrfToken();
  if (studyWorkerToken) headers.Authorization = `StudyWorker ${studyWorkerToken}`;
  let response, text;
  try {
    response = await fetch(url, { method, headers, body, credentials: "same-origin", signal });
    text = await response.text();
  } catch (error) {
    if (error.name === "AbortError") throw error;
    throw new NetworkError(error.message || "network error");
  }
  let data = null;
  if (text) {
    try {
      data = JSON.parse(text);
    } catch {
      data = { detail: text.slice(0, 300) };
    }
  }
  return { status: response.status, ok: response.ok, data, headers: response.headers };
}

/* A random UUID (v4) naming one answer, so that sending it twice stores it once. Falls back to
   getRandomValues where randomUUID is missing (pages served over plain http on a LAN address). */
export function newClientId() {
  if (crypto.randomUUID) return crypto.randomUUID();
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  bytes[6] = (bytes[6] & 0x0f) | 0x40;
  bytes[8] = (bytes[8] & 0x3f) | 0x80;
  const hex = [...bytes].map((b) => b.toString(16).padStart(2, "0")).join("");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/* The first readable message of an API error body. */
export function errorText(data, fallback = "The server refused this.") {
  if (!data) return fallback;
  if (typeof data === "string") return data;
  if (data.detail) return String(data.detail);
  const first = Object.entries(data)[0];
  if (!first) return fallback;
  const [field, problem] = first;
  const text = Array.isArray(problem) ? problem.join(" ") : typeof problem === "object" ? JSON.stringify(problem) : problem;
  return field === "non_field_errors" ? text : `${field}: ${text}`;
}
