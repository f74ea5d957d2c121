/* Admin pages: forms and buttons that call the REST API, and live progress of background jobs.

   A <form data-api-form action="/api/v1/..."> is sent as JSON (or as multipart when it has
   data-encoding="multipart"); field values are typed by data-type="int|float|bool" and fields
   marked data-list collect every checked box of that name into a list. The API's refusals are
   shown next to their fields, and a refused file's problems as a table of file, line and field.
   When the API answers with a job (202 + status URL), its progress is shown until it ends.

   After success: data-after="reload" reloads the page; data-result-link="/admin-ui/pools/{pool_id}/"
   offers a link filled from the job's result, and data-after="open-result" follows it at once. A job whose result says
   created: false (the same file imported before) shows data-already-text, filled from the result,
   instead. */
import { api, errorText } from "../api.js";

const POLL_MS = 500;

/* A node with its attributes ("text": its text, "className": its class) and children. */
export function element(tag, attributes = {}, children = []) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attributes)) {
    if (key === "text") node.textContent = value;
    else if (key === "className") node.className = value;
    else node.setAttribute(key, value);
  }
  node.append(...children);
  return node;
}

/* A form's data-* setting. Not form.dataset: a field named "dataset" would shadow it. */
function setting(form, name) {
  return form.getAttribute(`data-${name}`);
}

function typed(field, raw) {
  switch (field.dataset.type) {
    case "int":
      return Number.parseInt(raw, 10);
    case "float":
      return Number.parseFloat(raw);
    default:
      return raw;
  }
}

/* The JSON body of a form: typed values, lists for data-list fields, empty optional fields left out
   (or sent as null / "" when marked data-empty="null" / "blank", so that emptying one clears it). */
export function formJson(form) {
  const body = {};
  for (const field of form.elements) {
    if (!field.name || field.disabled || field.dataset.path !== undefined) continue;
    if (field.dataset.list !== undefined) {
      body[field.name] = body[field.name] || [];
      if (field.checked) body[field.name].push(typed(field, field.value));
    } else if (field.type === "checkbox") {
      body[field.name] = field.checked;
    } else if (field.value !== "") {
      body[field.name] = typed(field, field.value);
    } else if (field.dataset.empty === "null") {
      body[field.name] = null; // an emptied optional setting is cleared, not left as it was
    } else if (field.dataset.empty === "blank") {
      body[field.name] = "";
    }
  }
  return body;
}

/* The form's action, with {name} filled from its data-path fields (e.g. the pool of a grant). */
function actionOf(form) {
  return form.getAttribute("action").replace(/\{(\w+)\}/g, (_, name) => encodeURIComponent(form.elements[name].value));
}

function clearErrors(form) {
  form.querySelectorAll(".field-error, .form-errors").forEach((node) => node.remove());
  form.querySelectorAll("[aria-invalid]").forEach((node) => node.removeAttribute("aria-invalid"));
}

/* File problems (ImportRejected and refused jobs): one row each, with file, line and field. */
export function issuesTable(issues, truncated = false) {
  const rows = issues.map((issue) => element("tr", {}, [
    element("td", { text: issue.file || "" }), element("td", { className: "num", text: issue.line ?? "–" }),
    element("td", { text: issue.field || "–" }), element("td", { text: issue.message || issue.text || "" }),
  ]));
  const table = element("table", { className: "issues" }, [
    element("thead", {}, [element("tr", {}, ["File", "Line", "Field", "Problem"].map((h) => element("th", { scope: "col", text: h })))]),
    element("tbody", {}, rows),
  ]);
  const wrap = element("div", { className: "issues-wrap" }, [table]);
  if (truncated) wrap.append(element("p", { className: "muted", text: "Only the first problems are listed; there may be more." }));
  return wrap;
}

function showErrors(form, status, data) {
  const box = element("div", { className: "form-errors", role: "alert" });
  if (data && Array.isArray(data.errors)) {
    box.append(element("p", { className: "error", text: data.detail || "The file was refused; nothing was written." }), issuesTable(data.errors, data.truncated));
  } else if (data && typeof data === "object" && !data.detail) {
    for (const [name, problems] of Object.entries(data)) {
      const text = Array.isArray(problems) ? problems.map((p) => (typeof p === "object" ? JSON.stringify(p) : p)).join(" ") : String(problems);
      const field = form.elements[name];
      const anchor = field && (field.length && !field.tagName ? field[0].closest("fieldset") || field[0] : field);
      if (anchor && anchor.insertAdjacentElement) {
        const id = `${form.id || "form"}-${name}-error`;
        anchor.insertAdjacentElement("afterend", element("p", { className: "field-error error", id, text }));
        (field.tagName ? field : field[0]).setAttribute("aria-invalid", "true");
      } else {
        box.append(element("p", { className: "error", text: name === "non_field_errors" ? text : `${name}: ${text}` }));
      }
    }
  } else {
    box.append(element("p", { className: "error", text: status >= 500 ? "The server failed; try again." : errorText(data) }));
  }
  if (box.childNodes.length) form.append(box);
}

function isFinished(job) {
  return job.status === "succeeded" || job.status === "failed";
}

/* Each execution of a job by a worker and how it ended (a lost worker, a retry). */
function attemptList(attempts) {
  return element("ol", { className: "job-attempts", "aria-label": "Attempts" }, attempts.map((a) => element("li", {
    text: `Attempt ${a.number}: ${a.outcome}${a.worker ? ` (${a.worker})` : ""}${a.message && a.message !== "done" ? ` – ${a.message}` : ""}`,
  })));
}

/* The pages a finished job's result leads to: its report, or for a machine judge's run over a
   pool, the report that measures the judge against people (the reports page, chosen for it). */
function resultLinks(job) {
  const result = job.result;
  const links = [];
  if (Number.isInteger(result.report_id)) {
    links.push(element("a", { href: `/reports/${result.report_id}/`, className: "button", text: "Open the report" }));
  }
  const pool = job.params && job.params.pool_id;
  if (job.kind === "machine_judge_run" && Number.isInteger(result.judge_id) && Number.isInteger(pool)) {
    const query = new URLSearchParams({ pool, kind: "machine_judge", judge: result.judge_id });
    links.push(element("a", { href: `/reports/?${query}#report-form`, className: "button",
      text: "Its report: the machine judge against people" }));
  }
  return links;
}

/* Polls a job and renders its status, progress, message, result, problems and attempts into
   `container`, with a retry button when the job failed and may be retried. */
export class JobProgress {
  constructor(container, url, { onFinished } = {}) {
    this.container = container;
    this.url = url;
    this.onFinished = onFinished;
    this.bar = element("progress", { max: "1", "aria-label": "Job progress" });
    this.badge = element("span", { className: "badge" });
    this.counts = element("span", { className: "muted" });
    this.title = element("strong");
    this.message = element("p", { className: "job-message" });
    this.details = element("div");
    this.actions = element("div", { className: "job-actions" });
    this.box = element("div", { className: "job-progress", role: "status", "aria-live": "polite" },
      [element("div", { className: "row" }, [this.title, this.badge, this.counts]), this.bar, this.message, this.details]);
    // Outside the live region: a button must not be re-announced on every poll.
    container.replaceChildren(this.box, this.actions);
    this.poll();
  }

  /* An admin's retry of a failed job: the same job is queued again and watched from here. */
  async retry(url, button) {
    button.disabled = true;
    let response;
    try {
      response = await api(url, { method: "POST", json: {} });
    } catch (error) {
      this.actions.append(element("p", { className: "error", role: "alert", text: `No answer from the server (${error.message}).` }));
      button.disabled = false;
      return;
    }
    if (!response.ok) {
      this.actions.append(element("p", { className: "error", role: "alert", text: errorText(response.data, "The job could not be retried.") }));
      button.disabled = false;
      return;
    }
    this.render(response.data);
    if (isFinished(response.data)) this.onFinished?.(response.data);
    else setTimeout(() => this.poll(), POLL_MS);
  }

  async poll() {
    let response;
    try {
      response = await api(this.url);
    } catch {
      setTimeout(() => this.poll(), POLL_MS * 4);
      return;
    }
    if (!response.ok) {
      this.message.textContent = errorText(response.data, "Could not read the job.");
      return;
    }
    const job = response.data;
    this.render(job);
    if (isFinished(job)) this.onFinished?.(job);
    else setTimeout(() => this.poll(), POLL_MS);
  }

  render(job) {
    this.box.dataset.status = job.status;
    // What the job does and to what ("Build a pool: main"), from services/operations/describe.py.
    this.title.textContent = job.title || job.kind.replaceAll("_", " ");
    this.badge.className = `badge ${job.status}`;
    this.badge.textContent = job.status;
    const { done, total, fraction } = job.progress;
    const finished = job.status === "succeeded" || job.status === "failed";
    if (fraction != null) this.bar.value = fraction;
    else if (finished) this.bar.value = job.status === "succeeded" ? 1 : 0;
    else this.bar.removeAttribute("value"); // no total known yet: an indeterminate bar
    this.counts.textContent = total ? `${done.toLocaleString()} / ${total.toLocaleString()}` : done ? done.toLocaleString() : "";
    this.message.textContent = job.message || "";
    this.details.replaceChildren();
    if (job.errors && job.errors.length) this.details.append(issuesTable(job.errors));
    if (job.status === "succeeded" && job.result && typeof job.result === "object") {
      if (job.summary) {
        this.details.append(element("p", { className: "job-summary", text: job.summary }));
      } else {
        // The API's own addresses are for scripts; the page links to pages (resultLinks).
        const facts = Object.entries(job.result).filter(([k, v]) => typeof v !== "object" && k !== "url");
        if (facts.length) {
          this.details.append(element("dl", { className: "facts" }, facts.flatMap(([k, v]) => [
            element("dt", { text: k.replaceAll("_", " ") }), element("dd", { text: String(v) })])));
        }
      }
      const links = resultLinks(job);
      if (links.length) this.details.append(element("p", { className: "job-links" }, links));
    }
    const attempts = job.attempt_history || [];
    if (attempts.length > 1 || attempts.some((a) => a.outcome === "lost")) this.details.append(attemptList(attempts));
    this.actions.replaceChildren();
    if (job.status === "failed" && job.retryable) {
      const button = element("button", { type: "button", className: "button", text: "Retry this job" });
      button.addEventListener("click", () => this.retry(job.retry_url, button));
      this.actions.append(button);
    } else if (job.status === "failed" && job.retry_refusal) {
      this.actions.append(element("p", { className: "muted", text: `Not retryable: ${job.retry_refusal}.` }));
    }
  }
}

/* "Created {created} raters: {created.username}." filled from the API's answer: a list gives its
   length, list.field the field of each item joined. */
export function filled(template, data) {
  return template.replace(/\{(\w+)(?:\.(\w+))?\}/g, (_, key, field) => {
    const value = data ? data[key] : undefined;
    if (Array.isArray(value)) return field ? value.map((item) => item[field]).join(", ") : String(value.length);
    return value == null ? "" : String(value);
  });
}

function afterSuccess(form, status, data) {
  const out = form.querySelector("[data-job]") || form;
  // Page scripts show what the answer created (a study's entry URL, a new pool's row).
  const tell = (detail) => form.dispatchEvent(new CustomEvent("api-form-done", { bubbles: true, detail }));
  const done = (job) => {
    if (job && job.status !== "succeeded") return;
    tell(job ? job.result : data);
    // The same file sent again: the job finds the earlier import (result.created false). Say so
    // and stay on the page, rather than reloading onto a list that did not change.
    if (job && job.result && job.result.created === false && setting(form, "already-text")) {
      const text = setting(form, "already-text").replace(/\{(\w+)\}/g, (_, k) => job.result[k]);
      out.append(element("p", { className: "banner notice already-imported", role: "status", text }));
      return;
    }
    if (setting(form, "after") === "reload") setTimeout(() => location.reload(), 900);
    if (setting(form, "result-link") && job && job.result) {
      const href = setting(form, "result-link").replace(/\{(\w+)\}/g, (_, k) => job.result[k]);
      out.append(element("p", {}, [element("a", { className: "button primary", href, text: setting(form, "result-text") || "Open" })]));
      if (setting(form, "after") === "open-result") location.assign(href);
    }
  };
  if (data && data.status_url) {
    new JobProgress(out, data.status_url, { onFinished: done });
    return;
  }
  out.append(element("p", { className: "ok form-done", role: "status", text: filled(setting(form, "done-text") || "Done.", data) }));
  // Saved: what said "not saved yet" no longer does; what the server warns of (a gold rule that
  // cannot act on this pool) is shown, with its numbers, in place of an earlier warning.
  form.querySelectorAll("[data-unsaved], .form-warning").forEach((node) => node.remove());
  for (const warning of (data && data.warnings) || []) {
    out.append(element("p", { className: "banner notice form-warning", role: "status", text: `Saved, but ${warning}.` }));
  }
  done(null);
}

/* A multipart body: every field as the browser sends it, but an empty data-omit-empty field is
   left out, so the API applies its default instead of refusing "". */
function multipart(form) {
  const body = new FormData(form);
  for (const field of form.querySelectorAll("[data-omit-empty]")) if (!field.disabled && field.value === "") body.delete(field.name);
  return body;
}

export function bindApiForms(root = document) {
  for (const form of root.querySelectorAll("form[data-api-form]")) {
    form.addEventListener("submit", async (event) => {
      event.preventDefault();
      const button = form.querySelector("[type=submit]");
      clearErrors(form);
      form.querySelectorAll(".form-done").forEach((node) => node.remove());
      button.disabled = true;
      // A slow request (a file read and checked) says what is happening while the button waits.
      const busy = setting(form, "busy-text");
      if (busy) button.after(element("p", { className: "muted form-done form-busy", role: "status", text: busy }));
      try {
        const method = (setting(form, "method") || "POST").toUpperCase();
        const request = setting(form, "encoding") === "multipart" ? { method, form: multipart(form) } : { method, json: formJson(form) };
        const response = await api(actionOf(form), request);
        if (response.ok) afterSuccess(form, response.status, response.data);
        else showErrors(form, response.status, response.data);
      } catch (error) {
        showErrors(form, 0, { detail: `No answer from the server (${error.message}).` });
      } finally {
        button.disabled = false;
        form.querySelectorAll(".form-busy").forEach((node) => node.remove());
      }
    });
  }
}

/* A button's data-confirm question, asked in the page beside it (never the browser's dialog, as
   every other question of these pages): "Confirm: <what the button says>" sends, Cancel takes the
   question back. */
function askInPage(button, send) {
  const box = element("div", { className: "confirm-box row", role: "group", "aria-label": "Confirm" });
  const yes = element("button", { type: "button", className: button.classList.contains("danger") ? "danger" : "primary",
    text: `Confirm: ${button.textContent.trim()}` });
  const no = element("button", { type: "button", text: "Cancel" });
  const close = () => {
    box.remove();
    button.hidden = false;
  };
  yes.addEventListener("click", () => {
    close();
    send(button);
  });
  no.addEventListener("click", () => {
    close();
    button.focus();
  });
  box.append(element("p", { role: "status", text: button.dataset.confirm }), yes, no);
  button.hidden = true;
  button.after(box);
  yes.focus();
}

/* <button data-api="/api/v1/..." data-method="PATCH" data-body='{"paused": true}' data-confirm="…">:
   calls the API (after the data-confirm question, asked in the page), then reloads the page (or
   removes the closest [data-remove-on-success]); data-done-text is then announced in the page's
   #action-status. */
export function bindApiButtons(root = document) {
  root.addEventListener("click", (event) => {
    const button = event.target.closest("button[data-api]");
    if (!button) return;
    if (button.dataset.confirm) askInPage(button, sendApiButton);
    else sendApiButton(button);
  });
}

async function sendApiButton(button) {
  button.disabled = true;
  const container = button.closest("[data-api-scope]") || button.parentElement;
  container.querySelectorAll(".action-error").forEach((node) => node.remove());
  let body = button.dataset.body ? JSON.parse(button.dataset.body) : {};
  const extra = button.dataset.withField && container.querySelector(`[name=${button.dataset.withField}]`);
  if (extra) body = { ...body, [extra.name]: extra.value };
  try {
    const response = await api(button.dataset.api, { method: button.dataset.method || "POST", json: body });
    if (!response.ok) throw new Error(errorText(response.data));
    const gone = button.closest("[data-remove-on-success]");
    // What happened, said where it stays visible once the card it came from is gone.
    const status = document.getElementById("action-status");
    if (status && button.dataset.doneText) status.textContent = filled(button.dataset.doneText, response.data);
    if (gone) {
      const parent = gone.parentElement;
      gone.remove();
      parent.dispatchEvent(new CustomEvent("api-done", { bubbles: true, detail: response.data }));
    } else {
      location.reload();
    }
  } catch (error) {
    container.append(element("p", { className: "error action-error", role: "alert", text: error.message }));
    button.disabled = false;
  }
}

export function bindJobProgress(root = document) {
  for (const node of root.querySelectorAll("[data-job-url]")) new JobProgress(node, node.dataset.jobUrl);
}
