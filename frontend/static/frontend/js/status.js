/* The visible "saved / saving / offline" line of the rater pages. */

export function showSaveStatus(element, outbox) {
  const render = () => {
    const waiting = outbox.pending;
    const refused = outbox.refused().length;
    const answers = (n) => `${n} answer${n === 1 ? "" : "s"}`;
    let status, text;
    if (outbox.connection === "offline") {
      status = "offline";
      text = waiting ? `Offline: ${answers(waiting)} kept on this device` : "Offline";
    } else if (outbox.connection === "signed_out") {
      status = "signed_out";
      text = `Signed out: log in again to send ${answers(waiting)} (they are kept)`;
    } else if (outbox.connection === "server_error") {
      status = "retrying";
      text = `Server not answering: ${answers(waiting)} kept, retrying`;
    } else if (waiting) {
      status = "saving";
      text = `Saving ${answers(waiting)}…`;
    } else if (refused) {
      // Never "all saved" while an answer the server refused is in view: that one is not stored.
      status = "refused";
      text = "Not all answers saved";
    } else {
      status = "saved";
      text = "All answers saved";
    }
    element.dataset.status = status;
    element.dataset.pending = String(waiting);
    element.textContent = text;
    if (status === "signed_out") {
      const link = document.createElement("a");
      link.href = `/login/?next=${encodeURIComponent(location.pathname)}`;
      link.textContent = "Log in";
      element.append(" ", link);
    }
    if (refused) {
      const note = document.createElement("span");
      note.className = "refused";
      note.textContent = ` · ${answers(refused)} refused by the server`;
      note.title = outbox.refused().map((r) => (r.response && r.response.detail) || `HTTP ${r.status}`).join("\n");
      element.append(note);
    }
  };
  outbox.addEventListener("change", render);
  render();
  return render;
}
