/* Admin forms of the reports page: start a report, an export, a judgments import, scoring stored
   runs against a judgment set, a set's agreement or a set from a pool's labels through the REST
   API, then follow the job until it ends. A failed job lists its problems (file, line, field). */
import { api, errorText } from "../js/api.js";

const statusLine = document.getElementById("job-status");

function say(text, failed = false) {
  statusLine.textContent = text;
  statusLine.classList.toggle("failed", failed);
}

const field = (form, name) => form.elements.namedItem(name);

/* The parameters of the chosen kind or format: only its fieldset is shown and sent (the others are
   disabled, so the browser neither checks nor sends them). Each field is typed as its declaration
   says (data-param, frontend/views/param_inputs.py); an empty field is left out, which is the
   declared default. A value that is not a number is sent as typed, for the API to refuse by name. */
function showParamsOf(select) {
  for (const fieldset of select.form.querySelectorAll("fieldset[data-params-for]")) {
    const other = fieldset.dataset.paramsFor !== select.value;
    fieldset.hidden = other;
    fieldset.disabled = other;
  }
}

function typedParam(raw, type) {
  if (type === "int" || type === "float") {
    const number = Number(raw);
    return raw.trim() !== "" && Number.isFinite(number) ? number : raw;
  }
  return raw;
}

function paramsOf(form, choice) {
  const fieldset = form.querySelector(`fieldset[data-params-for="${CSS.escape(choice)}"]`);
  const params = {};
  if (!fieldset) return params;
  for (const input of fieldset.querySelectorAll("[data-param]")) {
    const type = input.dataset.param;
    if (type === "bool") {
      params[input.name] = input.checked;
    } else if (type.startsWith("list-")) {
      const items = input.value.split(/[\s,;]+/).filter(Boolean);
      if (items.length) params[input.name] = items.map((item) => typedParam(item, type.slice(5)));
    } else if (input.value.trim() !== "") {
      params[input.name] = typedParam(input.value.trim(), type);
    }
  }
  return params;
}

/* A refusal naming a parameter (400 {name: [text]}) is shown beside that field too. */
function markRefused(form, choice, data) {
  const fieldset = form.querySelector(`fieldset[data-params-for="${CSS.escape(choice)}"]`);
  if (!fieldset || !data || typeof data !== "object") return;
  for (const input of fieldset.querySelectorAll("[data-param]")) {
    const refused = Object.prototype.hasOwnProperty.call(data, input.name);
    if (refused) input.setAttribute("aria-invalid", "true");
    else input.removeAttribute("aria-invalid");
  }
}

const SHOWN_PROBLEMS = 10;

class JobFailed extends Error {
  constructor(job) {
    const problems = (job.errors || []).map((e) => e.text);
    super(problems.length ? `Job ${job.id} failed, ${problems.length === 1 ? "1 problem" : `${problems.length} problems`}:`
      : `Job ${job.id} failed: ${job.message || "no message"}`);
    this.problems = problems;
  }
}

function sayProblems(error) {
  say(error.message, true);
  if (!error.problems || !error.problems.length) return;
  const list = document.createElement("ul");
  for (const text of error.problems.slice(0, SHOWN_PROBLEMS)) {
    const item = document.createElement("li");
    item.textContent = text;
    list.append(item);
  }
  if (error.problems.length > SHOWN_PROBLEMS) {
    const more = document.createElement("li");
    more.textContent = `… and ${error.problems.length - SHOWN_PROBLEMS} more (the job page lists them all)`;
    list.append(more);
  }
  statusLine.append(list);
}

async function follow(job) {
  for (;;) {
    const { data } = await api(job.status_url);
    if (data.status === "succeeded") return data;
    if (data.status === "failed") throw new JobFailed(data);
    const progress = data.progress && data.progress.fraction != null ? ` ${Math.round(data.progress.fraction * 100)}%` : "";
    say(`Job ${data.id} ${data.status}${progress}…`);
    await new Promise((resolve) => setTimeout(resolve, 1000));
  }
}

async function submit(form, request) {
  const button = form.querySelector("button[type=submit]");
  button.disabled = true;
  try {
    const response = await request();
    if (response.status !== 202) throw new Error(errorText(response.data));
    say(`Job ${response.data.id} queued…`);
    const job = await follow(response.data);
    const result = job.result || {};
    if (result.report_id) {
      window.location.href = `/reports/${result.report_id}/`;
    } else if (result.download_url) {
      say("Export ready: ");
      const link = document.createElement("a");
      link.href = result.download_url;
      link.textContent = `${result.name} (${result.size.toLocaleString()} bytes)`;
      statusLine.append(link);
    } else if (result.judgment_set_id) {
      // The list of sets and the forms' set choices are drawn by the server: show them afresh.
      const verb = result.created === false ? "Already imported (same file)" : "Judgment set";
      sessionStorage.setItem("reports-status", `${verb} '${result.name}': ${Object.entries(result.counts || {})
        .map(([key, value]) => `${key.replaceAll("_", " ")}: ${value}`).join(", ")}.`);
      window.location.href = `/reports/?judgment_set=${result.judgment_set_id}#judgment-sets`;
    } else {
      say(`Job ${job.id} done.`);
    }
  } catch (error) {
    sayProblems(error);
  } finally {
    button.disabled = false;
  }
}

for (const [formId, choiceName, path] of [["report-form", "kind", "reports"], ["export-form", "format", "exports"]]) {
  const form = document.getElementById(formId);
  const choice = field(form, choiceName);
  choice.addEventListener("change", () => showParamsOf(choice));
  showParamsOf(choice);
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    submit(form, async () => {
      const response = await api(`/api/v1/pools/${field(form, "pool").value}/${path}/`, {
        method: "POST", json: { [choiceName]: choice.value, params: paramsOf(form, choice.value) },
      });
      markRefused(form, choice.value, response.data);
      return response;
    });
  });
}

const judgmentsForm = document.getElementById("judgments-form");
const formatHint = document.getElementById("judgments-format-hint");
const raterOptions = document.getElementById("rater-options");

function showFormat() {
  const choice = field(judgmentsForm, "format");
  formatHint.textContent = choice.selectedOptions[0].dataset.hint || "";
  raterOptions.hidden = choice.value !== "rater_labels";
}
field(judgmentsForm, "format").addEventListener("change", showFormat);
showFormat();

judgmentsForm.addEventListener("submit", (event) => {
  event.preventDefault();
  const form = event.currentTarget;
  const body = new FormData();
  body.append("file", field(form, "file").files[0]);
  const names = ["format", "name", "only_dataset"];
  if (field(form, "format").value === "rater_labels") names.push("columns", "repeats", "file_format");
  for (const name of names) {
    const value = field(form, name).value.trim();
    if (value) body.append(name, value);
  }
  // Checked leaves the choice to the format (verdict files seed pools, raw labels cannot).
  if (!field(form, "seeds_pools").checked) body.append("seeds_pools", "false");
  submit(form, () => api(`/api/v1/datasets/${field(form, "dataset").value}/judgments/import/`, { method: "POST", form: body }));
});

const evaluateForm = document.getElementById("evaluate-form");

/* Only the runs of the chosen set's dataset can be scored against it. */
function showRunsOfSet() {
  const chosen = field(evaluateForm, "judgment_set").selectedOptions[0];
  const dataset = chosen ? chosen.dataset.dataset : "";
  for (const group of field(evaluateForm, "runs").querySelectorAll("optgroup")) {
    const other = group.dataset.dataset !== dataset;
    group.hidden = other;
    group.disabled = other;
    if (other) for (const option of group.querySelectorAll("option")) option.selected = false;
  }
}
field(evaluateForm, "judgment_set").addEventListener("change", showRunsOfSet);
showRunsOfSet();

evaluateForm.addEventListener("submit", (event) => {
  event.preventDefault();
  const form = event.currentTarget;
  const runs = [...field(form, "runs").selectedOptions].map((option) => Number(option.value));
  const json = { runs };
  if (field(form, "conventions").value) json.conventions = field(form, "conventions").value;
  const measures = field(form, "measures").value.split(/[\s,]+/).filter(Boolean);
  if (measures.length) json.measures = measures;
  submit(form, () => api(`/api/v1/judgment-sets/${field(form, "judgment_set").value}/evaluate/`, { method: "POST", json }));
});

document.getElementById("agreement-form").addEventListener("submit", (event) => {
  event.preventDefault();
  const form = event.currentTarget;
  const json = { level: field(form, "level").value };
  const binarize = field(form, "binarize_at").value.trim();
  if (binarize) json.binarize_at = Number(binarize);
  if (field(form, "repeats").value) json.repeats = field(form, "repeats").value;
  submit(form, () => api(`/api/v1/judgment-sets/${field(form, "judgment_set").value}/agreement/`, { method: "POST", json }));
});

document.getElementById("pool-set-form").addEventListener("submit", (event) => {
  event.preventDefault();
  const form = event.currentTarget;
  const json = { originals: field(form, "originals").checked };
  if (field(form, "name").value.trim()) json.name = field(form, "name").value.trim();
  submit(form, () => api(`/api/v1/pools/${field(form, "pool").value}/judgment-sets/`, { method: "POST", json }));
});

/* After a set was made: say so, and mark its row. */
const added = new URLSearchParams(window.location.search).get("judgment_set");
if (added) {
  const row = document.querySelector(`tr[data-judgment-set="${CSS.escape(added)}"]`);
  if (row) row.classList.add("just-added");
  const text = sessionStorage.getItem("reports-status");
  if (text) say(text);
  sessionStorage.removeItem("reports-status");
}
