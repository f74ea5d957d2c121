/* The guidelines dialog of the judging and ranking pages. */

/** Opens the dialog at its top, the core rule in view (or closes it when open): showModal focuses
 * the first control, the Close button at the bottom, and scrolls the dialog down to it. */
export function toggleGuidelines(dialog) {
  if (dialog.open) {
    dialog.close();
    return;
  }
  dialog.showModal();
  dialog.scrollTop = 0;
  dialog.querySelector("h2")?.focus({ preventScroll: true });
}
