/* Starts Swagger UI or Redoc on the API docs pages. drf-spectacular's own templates do this in an
   inline script, which the Content-Security-Policy refuses; the settings come from data attributes. */
import { csrfToken } from "./api.js";

const swagger = document.getElementById("swagger-ui");
if (swagger) {
  // Swagger UI's own dark theme (html.dark-mode, its contrasts checked by its authors) follows the
  // system's colour scheme, as the rest of the site does (dark.css).
  const dark = window.matchMedia("(prefers-color-scheme: dark)");
  const follow = () => document.documentElement.classList.toggle("dark-mode", dark.matches);
  follow();
  dark.addEventListener("change", follow);
  const csrfHeader = swagger.dataset.csrfHeader || "X-CSRFToken";
  window.ui = window.SwaggerUIBundle({
    url: swagger.dataset.schemaUrl,
    domNode: swagger,
    presets: [window.SwaggerUIBundle.presets.apis],
    layout: "BaseLayout",
    // Deep links put a link inside each operation's summary button: a control inside a control,
    // which screen readers cannot reach (axe: nested-interactive).
    deepLinking: false,
    // Its highlighter colours numbers 3.8:1 on the examples' dark background (axe: color-contrast).
    syntaxHighlight: { activated: false },
    filter: true,
    // The badge is an image from validator.swagger.io: another origin, which the policy refuses.
    validatorUrl: null,
    // "Try it out" calls go with the session cookie, so unsafe methods need Django's CSRF token.
    requestInterceptor: (request) => {
      if (!["GET", "HEAD", undefined].includes(request.method)) request.headers[csrfHeader] = csrfToken();
      return request;
    },
  });
}

const redoc = document.getElementById("redoc");
if (redoc) {
  // Redoc's styles go into <style> elements: with this response's nonce, the policy lets them apply.
  // Its search runs in a worker made from a blob: URL, which worker-src refuses; Swagger UI filters instead.
  window.Redoc.init(redoc.dataset.schemaUrl, { nonce: redoc.dataset.styleNonce, disableSearch: true }, redoc);
}
