/* The raters page: invitation links. A rater made without a password, each row of a CSV import
   without one, and an admin's password reset get a one-use link to set their own password. The
   server keeps only the link's hash, so the page shows each link once, with a copy button (a CSV
   import's as a file to download); a reload does not bring them back. */
import { api, errorText } from "../api.js";
import { element } from "./forms.js";

let linkBoxes = 0;

/* The link in a read-only field with a Copy button; without clipboard permission the text is
   selected for Ctrl+C. */
function linkBox(username, url, days) {
  const id = `invite-link-${++linkBoxes}`;
  const field = element("input", { id, type: "text", readonly: "", value: url, className: "invite-url",
                                   "data-invite-for": username });
  const status = element("span", { className: "muted small", role: "status" });
  const copy = element("button", { type: "button", text: "Copy link" });
  copy.addEventListener("click", async () => {
    try {
      await navigator.clipboard.writeText(field.value);
      status.textContent = "Copied.";
    } catch {
      field.select();
      status.textContent = "Selected: press Ctrl+C (⌘C) to copy.";
    }
  });
  return element("div", { className: "invite-link banner notice" }, [
    element("label", { for: id, text: `Link for ${username} to set their password` }),
    field, copy, status,
    element("p", { className: "help", text: `Shown this once: send it to ${username} now. It works once, for ${days} days; `
      + "a lost link is replaced by “Reset password”." }),
  ]);
}

function csvField(value) {
  const text = String(value);
  return /[",\n\r]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}

/* A CSV import's links as a file (username,link), made in the browser: nothing is stored. */
function invitationsDownload(invitations) {
  const lines = ["username,link", ...invitations.map((i) => `${csvField(i.username)},${csvField(i.url)}`)];
  const href = URL.createObjectURL(new Blob([`${lines.join("\r\n")}\r\n`], { type: "text/csv" }));
  const count = invitations.length;
  return element("div", { className: "invite-links banner notice" }, [
    element("a", { className: "button primary", href, download: "rater-invitations.csv",
                   text: `Download the ${count} invitation link${count === 1 ? "" : "s"} (CSV)` }),
    element("p", { className: "help", text: "Shown this once: download the file now and send each rater their link. "
      + "Each works once, for 7 days; a lost link is replaced by “Reset password”." }),
  ]);
}

/* "Reset password" asks in the row (no browser dialog), then makes the link and shows it there. */
function askReset(button) {
  const cell = button.closest("td");
  const box = cell.querySelector("[data-reset-box]");
  const name = button.dataset.rater;
  const confirm = element("button", { type: "button", className: "danger", text: "Confirm: make a new link" });
  const cancel = element("button", { type: "button", text: "Cancel" });
  const close = () => {
    box.hidden = true;
    box.replaceChildren();
    button.hidden = false;
    button.focus();
  };
  cancel.addEventListener("click", close);
  confirm.addEventListener("click", async () => {
    confirm.disabled = true;
    try {
      const response = await api(button.dataset.resetUrl, { method: "POST", json: {} });
      if (!response.ok) throw new Error(errorText(response.data));
      const done = element("button", { type: "button", text: "Done" });
      done.addEventListener("click", close);
      box.replaceChildren(linkBox(name, response.data.invitation_url, response.data.invitation_expires_in_days), done);
      box.querySelector("input").focus();
    } catch (error) {
      box.append(element("p", { className: "error", role: "alert", text: error.message }));
      confirm.disabled = false;
    }
  });
  box.replaceChildren(
    element("p", { role: "status", text: `Make a new password link for ${name}? Their unused links stop working; `
      + "their current password works until they set a new one." }),
    confirm, cancel);
  box.hidden = false;
  button.hidden = true;
  confirm.focus();
}

export function bindRaters() {
  const create = document.getElementById("rater-create");
  create?.addEventListener("api-form-done", (event) => {
    const data = event.detail;
    if (data && data.invitation_url) create.append(linkBox(data.username, data.invitation_url, data.invitation_expires_in_days));
    create.querySelector("[name=password]").value = "";
  });
  const importForm = document.getElementById("rater-import");
  importForm?.addEventListener("api-form-done", (event) => {
    const invitations = (event.detail && event.detail.invitations) || [];
    if (invitations.length) importForm.append(invitationsDownload(invitations));
  });
  // Delegated: the rows are read again from the server after a create or an import.
  document.getElementById("rater-rows")?.addEventListener("click", (event) => {
    const button = event.target.closest("button[data-reset-url]");
    if (button) askReset(button);
  });
}

bindRaters();
