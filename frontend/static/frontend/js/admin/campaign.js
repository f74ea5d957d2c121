/* Campaign settings on the admin pages: the crowd study's entry URL (shown, copied, previewed),
   the build form's strategy-specific fields, and parts of a page refreshed in place after a form
   created something (a new pool in the dataset's table), so nothing needs a reload. */
import { api } from "../api.js";

/* The study as the API gives it (entry_url with the platform's parameters) fills the URL box. */
function showStudy(box, study) {
  const url = box.querySelector("#crowd-entry-url");
  url.value = study.entry_url;
  box.hidden = false;
  const preview = box.querySelector("#crowd-preview-link");
  // MTurk's preview (assignmentId=ASSIGNMENT_ID_NOT_AVAILABLE) shows the description and creates
  // no worker; a Prolific arrival always creates one, so it has no preview link.
  preview.hidden = study.platform !== "mturk";
  preview.href = `${study.entry_url.split("?")[0]}?${box.dataset.previewQuery}`;
  const text = document.getElementById("crowd-study-text");
  if (text) {
    text.textContent = `${study.title} · ${study.platform === "mturk" ? "Amazon Mechanical Turk" : "Prolific"} · ${study.is_open ? "open" : "closed"} · ${study.workers} worker${study.workers === 1 ? "" : "s"}`;
  }
}

async function copyField(button) {
  const field = document.getElementById(button.dataset.copyTarget);
  const status = document.getElementById(`${button.dataset.copyTarget.replace(/-url$/, "")}-copied`);
  let copied = false;
  try {
    await navigator.clipboard.writeText(field.value);
    copied = true;
  } catch {
    field.select(); // no clipboard permission: the text is selected for Ctrl+C
  }
  if (status) status.textContent = copied ? "Copied." : "Selected: press Ctrl+C (⌘C) to copy.";
}

function crowdStudy(box) {
  const form = document.getElementById("crowd-study-form");
  form.addEventListener("api-form-done", (event) => {
    showStudy(box, event.detail);
    form.querySelector("[type=submit]").textContent = "Save the study";
  });
  box.querySelector("[data-copy-target]").addEventListener("click", (event) => copyField(event.currentTarget));
  if (!box.hidden) {
    api(box.dataset.studyUrl).then((response) => {
      if (response.ok) showStudy(box, response.data);
    }).catch(() => {});
  }
}

/* Fields shown for one strategy only (data-for-strategy="bandit") are disabled under the others,
   so the form never sends a setting the chosen strategy does not take. */
function strategyFields(form) {
  const select = form.querySelector("[name=strategy]");
  const apply = () => {
    for (const field of form.querySelectorAll("[data-for-strategy]")) {
      const on = field.dataset.forStrategy.split(" ").includes(select.value);
      field.disabled = !on;
      field.closest("[data-strategy-field]").hidden = !on;
    }
  };
  select.addEventListener("change", apply);
  apply();
}

/* data-refresh="#a, #b" on a form: once it succeeded, those parts of the page are read again from
   the server and replaced, keeping the form and its job progress as they are. */
async function refreshParts(selectors) {
  const response = await fetch(location.href, { credentials: "same-origin", headers: { Accept: "text/html" } });
  if (!response.ok) return;
  const fresh = new DOMParser().parseFromString(await response.text(), "text/html");
  for (const selector of selectors.split(",").map((s) => s.trim())) {
    const now = document.querySelector(selector);
    const next = fresh.querySelector(selector);
    if (now && next) now.replaceChildren(...next.childNodes);
  }
}

export function bindCampaign() {
  const box = document.getElementById("crowd-entry");
  if (box) crowdStudy(box);
  for (const select of document.querySelectorAll("form [name=strategy]")) {
    if (select.form.querySelector("[data-for-strategy]")) strategyFields(select.form);
  }
  document.addEventListener("api-form-done", (event) => {
    const selectors = event.target.getAttribute("data-refresh");
    if (selectors) refreshParts(selectors);
  });
}
