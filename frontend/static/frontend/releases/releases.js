/* The admin's form of the releases page: make a release through the REST API (a job), follow the
   job, then open the new release's page. Refusals are the API's own messages. */
import { api, errorText } from "../js/api.js";

const statusLine = document.getElementById("job-status");
const form = document.getElementById("release-form");

function say(text, failed = false) {
  statusLine.textContent = text;
  statusLine.classList.toggle("failed", failed);
}

const chosen = (name) => [...form.elements.namedItem(name).selectedOptions].map((o) => Number(o.value));
const pools = form.elements.namedItem("pools");
const allowUnresolved = document.getElementById("release-allow-unresolved");

/* The chosen pools' resolved shares, before submitting: a pool with unresolved pairs is refused
   unless the box is ticked, and the box says what ticking it means. */
function showShares() {
  const list = document.getElementById("release-share");
  list.replaceChildren(...[...pools.selectedOptions].map((option) => {
    const item = document.createElement("li");
    item.textContent = `${option.dataset.name}: ${option.dataset.share}`;
    if (Number(option.dataset.unresolved) > 0) item.classList.add("unresolved");
    return item;
  }));
}
pools.addEventListener("change", showShares);
showShares();

async function follow(job) {
  for (;;) {
    const { data } = await api(job.status_url);
    if (data.status === "succeeded") return data;
    if (data.status === "failed") throw new Error(`Job ${data.id} failed: ${data.message || "no message"}`);
    say(`Job ${data.id} ${data.status}${data.progress && data.progress.message ? ` (${data.progress.message})` : ""}…`);
    await new Promise((resolve) => setTimeout(resolve, 1000));
  }
}

form.addEventListener("submit", async (event) => {
  event.preventDefault();
  const button = form.querySelector("button[type=submit]");
  button.disabled = true;
  try {
    const value = (name) => form.elements.namedItem(name).value;
    const response = await api("/api/v1/releases/", {
      method: "POST",
      json: {
        name: value("name").trim(), pools: chosen("pools"), judgment_sets: chosen("judgment_sets"),
        title: value("title"), licence: value("licence"),
        authors: value("authors").split(";").map((a) => a.trim()).filter(Boolean),
        allow_unresolved: allowUnresolved.checked,
      },
    });
    if (response.status !== 202) throw new Error(errorText(response.data));
    say(`Job ${response.data.id} queued…`);
    const job = await follow(response.data);
    window.location.href = `/releases/${job.result.release_id}/`;
  } catch (error) {
    say(error.message, true);
  } finally {
    button.disabled = false;
  }
});
