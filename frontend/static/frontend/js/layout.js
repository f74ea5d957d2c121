/* Every page: a table wider than the window scrolls inside its own box, not the whole page (a
   phone is 390 px wide; the admin and report tables are not). The box is a named region that
   takes the keyboard focus only while it actually scrolls, so arrow keys can move it
   (WCAG 2.1.1; axe's scrollable-region-focusable) without adding a tab stop to every table.
   Tables a page script adds later (job problems, lists) are wrapped as they appear. */

const wrapped = new WeakSet();
const names = new Map();

function uniqueName(name) {
  const count = (names.get(name) || 0) + 1;
  names.set(name, count);
  return count === 1 ? name : `${name} (${count})`;
}

function nameFor(table) {
  const caption = table.querySelector("caption");
  if (caption && caption.textContent.trim()) return caption.textContent.trim();
  const section = table.closest("section, figure, details, fieldset, .card");
  const heading = section && section.querySelector("h2, h3, figcaption, summary, legend");
  return heading && heading.textContent.trim() ? heading.textContent.trim() : "Table";
}

/* A visible hint above a table that is wider than its box: on a phone, columns past the edge
   (a Status, a Pause button) are otherwise easy to miss. */
function hintFor(box) {
  let hint = box.previousElementSibling;
  if (!hint || !hint.classList.contains("scroll-hint")) {
    hint = document.createElement("p");
    hint.className = "scroll-hint";
    hint.textContent = "Scroll sideways for more columns →";
    box.before(hint);
  }
  return hint;
}

function updateFocusable(box) {
  const scrolls = box.scrollWidth > box.clientWidth + 1;
  if (scrolls) {
    box.tabIndex = 0;
  } else if (!box.dataset.alwaysFocusable) {
    box.removeAttribute("tabindex");
  }
  box.dataset.scrolls = String(scrolls);
  if (scrolls) hintFor(box).hidden = false;
  else if (box.previousElementSibling?.classList.contains("scroll-hint")) box.previousElementSibling.hidden = true;
}

const resized = new ResizeObserver((entries) => entries.forEach(({ target }) =>
  updateFocusable(target.tagName === "TABLE" ? target.parentElement : target)));

function wrap(table) {
  if (wrapped.has(table)) return;
  wrapped.add(table);
  let box = table.parentElement;
  // A scroller the template made already (report tables): keep it, just watch it.
  if (!box || !box.classList.contains("scroll")) {
    box = document.createElement("div");
    box.className = "scroll";
    table.before(box);
    box.append(table);
  }
  if (!box.hasAttribute("role")) box.setAttribute("role", "region");
  // "Table: ..." so the region does not repeat its section's landmark name (axe landmark-unique);
  // a second table under the same heading gets a number.
  if (!box.hasAttribute("aria-label") && !box.hasAttribute("aria-labelledby")) box.setAttribute("aria-label", uniqueName(`Table: ${nameFor(table)}`));
  if (box.getAttribute("tabindex") === "0") box.dataset.alwaysFocusable = "true";
  updateFocusable(box);
  resized.observe(box);
  resized.observe(table);
}

function wrapAll(root) {
  root.querySelectorAll("table").forEach((table) => {
    // Tables inside a box that scrolls already (a job's problem list) stay as they are.
    if (table.closest(".issues-wrap")) return;
    wrap(table);
  });
}

const main = document.querySelector("main");
if (main) {
  wrapAll(main);
  new MutationObserver((changes) => {
    for (const change of changes) {
      change.addedNodes.forEach((node) => {
        if (node.nodeType !== Node.ELEMENT_NODE) return;
        if (node.tagName === "TABLE") {
          if (!node.closest(".issues-wrap")) wrap(node);
        } else if (!node.classList.contains("scroll")) {
          wrapAll(node);
        }
      });
    }
  }).observe(main, { childList: true, subtree: true });
}
