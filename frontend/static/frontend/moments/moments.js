/* Forms of the moments pages: each starts a background job through the API (building a pool or
   computing a report), shows its progress, and opens what the job made when it is done. */
import { api, errorText } from "../js/api.js";

const POLL_MS = 1000;

/* Read with getAttribute: a form's controls shadow its properties, and these forms have a control
   named "dataset", which hides the form's own dataset. */
const attribute = (form, name) => form.getAttribute(`data-${name}`);

/* "1-10:1, 11-100:0.2" -> [[1, 10, 1], [11, 100, 0.2]]; the API checks the ranges themselves. */
export function parseStrata(text) {
  return text.split(",").map((part) => part.trim()).filter(Boolean).map((part) => {
    const match = part.match(/^(\d+)\s*-\s*(\d+)\s*:\s*([0-9.]+)$/);
    if (!match) throw new Error(`"${part}" is not first-last:share (e.g. 11-100:0.2)`);
    return [Number(match[1]), Number(match[2]), Number(match[3])];
  });
}

function numbers(text, parse) {
  return text.split(",").map((part) => part.trim()).filter(Boolean).map((part) => {
    const value = parse(part);
    if (Number.isNaN(value)) throw new Error(`"${part}" is not a number`);
    return value;
  });
}

function body(form) {
  const json = {};
  for (const field of form.querySelectorAll("[name][data-type]")) {
    const { name } = field;
    const text = field.value.trim();
    switch (field.dataset.type) {
      case "int-list":
        json[name] = json[name] || [];
        if (field.checked && !field.closest("[hidden]")) json[name].push(Number(field.value));
        break;
      case "int":
        if (text !== "") json[name] = parseInt(text, 10);
        break;
      case "float":
        if (text !== "") json[name] = parseFloat(text);
        break;
      case "int-csv":
        json[name] = numbers(text, (part) => parseInt(part, 10));
        break;
      case "float-csv":
        json[name] = numbers(text, parseFloat);
        break;
      case "strata":
        json[name] = parseStrata(text);
        break;
      default:
        json[name] = text;
    }
  }
  for (const field of form.querySelectorAll("[name]:not([data-type])")) json[field.name] = field.value.trim();
  if (Array.isArray(json.runs) && json.runs.length === 0) throw new Error("Choose at least one run.");
  return json;
}

function showRunsOf(form) {
  const choice = form.querySelector(".dataset-choice");
  if (!choice) return;
  let shown = 0;
  for (const label of form.querySelectorAll(".run-choice [data-dataset]")) {
    const mine = label.dataset.dataset === choice.value;
    label.hidden = !mine;
    if (!mine) label.querySelector("input").checked = false;
    shown += mine;
  }
  const none = form.querySelector(".no-runs");
  if (none) none.hidden = shown > 0;
}

function say(status, text, state = "") {
  status.textContent = text;
  status.dataset.state = state;
}

async function follow(form, status, statusUrl) {
  for (;;) {
    const { ok, data } = await api(statusUrl);
    if (!ok) return say(status, errorText(data, "Could not read the job's status."), "failed");
    if (data.status === "succeeded") {
      say(status, "Done, opening the result…", "succeeded");
      const next = attribute(form, "next").replace(/\{(\w+)\}/g, (_, key) => encodeURIComponent(data.result[key]));
      window.location.assign(next);
      return;
    }
    if (data.status === "failed") {
      const problems = (data.errors || []).map((e) => e.message).join("; ");
      return say(status, `The job failed: ${problems || data.message}`, "failed");
    }
    const fraction = data.progress && data.progress.fraction;
    say(status, fraction == null ? `Job #${data.id} ${data.status}…` : `Job #${data.id} ${data.status}: ${Math.round(100 * fraction)}%`, "running");
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
}

for (const form of document.querySelectorAll("form.job-form")) {
  const status = form.querySelector(".job-status");
  const choice = form.querySelector(".dataset-choice");
  if (choice) {
    choice.addEventListener("change", () => showRunsOf(form));
    showRunsOf(form);
  }
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const button = form.querySelector("button[type=submit]");
    let json;
    try {
      json = body(form);
    } catch (error) {
      return say(status, error.message, "failed");
    }
    button.disabled = true;
    try {
      say(status, "Starting…", "running");
      const { ok, data, headers } = await api(attribute(form, "api"), { method: "POST", json });
      if (!ok) return say(status, errorText(data), "failed");
      await follow(form, status, headers.get("Location") || data.status_url);
    } catch (error) {
      say(status, `No answer from the server (${error.message}); try again.`, "failed");
    } finally {
      button.disabled = false;
    }
  });
}
