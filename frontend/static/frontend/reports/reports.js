/* Admin forms of the reports page: start a report, an export or a judgments import through the
   REST API, then follow the job until it ends. */
import { api, errorText } from "../js/api.js";

const statusLine = document.getElementById("job-status");

function say(text, failed = false) {
  statusLine.textContent = text;
  statusLine.classList.toggle("failed", failed);
}

const field = (form, name) => form.elements.namedItem(name);

function parseParams(raw) {
  if (!raw.trim()) return {};
  try {
    return JSON.parse(raw);
  } catch {
    throw new Error("Parameters must be JSON, for example {\"n_boot\": 1000}.");
  }
}

async function follow(job) {
  for (;;) {
    const { data } = await api(job.status_url);
    if (data.status === "succeeded") return data;
    if (data.status === "failed") {
      const problems = (data.errors || []).map((e) => e.text).slice(0, 5).join("; ");
      throw new Error(`Job ${data.id} failed: ${problems || data.message}`);
    }
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
    } else {
      say(`Imported judgments '${result.name}': ${Object.entries(result.counts || {})
        .map(([key, value]) => `${key.replaceAll("_", " ")} ${value}`).join(", ")}.`);
    }
  } catch (error) {
    say(error.message, true);
  } finally {
    button.disabled = false;
  }
}

document.getElementById("report-form").addEventListener("submit", (event) => {
  event.preventDefault();
  const form = event.currentTarget;
  submit(form, () => api(`/api/v1/pools/${field(form, "pool").value}/reports/`, {
    method: "POST", json: { kind: field(form, "kind").value, params: parseParams(field(form, "params").value) },
  }));
});

document.getElementById("export-form").addEventListener("submit", (event) => {
  event.preventDefault();
  const form = event.currentTarget;
  submit(form, () => api(`/api/v1/pools/${field(form, "pool").value}/exports/`, {
    method: "POST", json: { format: field(form, "format").value, params: parseParams(field(form, "params").value) },
  }));
});

document.getElementById("judgments-form").addEventListener("submit", (event) => {
  event.preventDefault();
  const form = event.currentTarget;
  const body = new FormData();
  body.append("file", field(form, "file").files[0]);
  if (field(form, "format").value) body.append("format", field(form, "format").value);
  if (field(form, "only_dataset").value) body.append("only_dataset", field(form, "only_dataset").value);
  submit(form, () => api(`/api/v1/datasets/${field(form, "dataset").value}/judgments/import/`, { method: "POST", form: body }));
});
