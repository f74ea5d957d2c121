"""The API's reference pages: Swagger UI at /api/v1/docs/ and Redoc at /api/v1/redoc/.

Both are drf-spectacular's views with our templates: the assets come from
drf-spectacular-sidecar's static files (no CDN) and the start-up code is a static module instead of
drf-spectacular's inline script, so the pages pass the same strict Content-Security-Policy as every
other page. Redoc (styled-components) writes its styles into <style> elements, which the policy
refuses unless they carry the response's nonce: its page alone adds a style nonce, handed to Redoc's
`nonce` option; scripts stay 'self' only. Who may read them: any signed-in user with a role (a signed-out visitor goes to the
login page). The schema they render, /api/v1/schema/, stays public: it describes operations, never
data, and tools generate clients from it without a session."""
from __future__ import annotations

from functools import cache
from pathlib import Path

from csp.constants import NONCE
from django.contrib.staticfiles import finders
from django.core.exceptions import ImproperlyConfigured
from django.http import HttpResponse
from django.templatetags.static import static
from django.urls import reverse
from django.views.decorators.http import require_GET
from csp.decorators import csp_update
from drf_spectacular.views import SpectacularRedocView, SpectacularSwaggerView
from rest_framework.permissions import AllowAny

from annotation import roles
from annotation.page_access import page_for

DOCS_ROLES = ("admin", roles.RATER, roles.RESEARCHER)


class SwaggerPage(SpectacularSwaggerView):
    # The page check (page_for) has run already; DRF's own would answer a signed-out visitor with JSON.
    permission_classes = [AllowAny]
    url_name = "api:schema"
    template_name = "frontend/api_docs/swagger.html"


class RedocPage(SpectacularRedocView):
    permission_classes = [AllowAny]
    url_name = "api:schema"
    template_name = "frontend/api_docs/redoc.html"

    @staticmethod
    def _redoc_standalone():
        return reverse("api:redoc-bundle")


# Redoc's sidebar shows a "by Redocly" logo loaded from cdn.redoc.ly, which img-src refuses (a
# console error on every visit). The bundle is served with that one address pointed at the copy
# of the logo among our static files; the rest of the bundle is the pinned sidecar's, byte for byte.
REDOC_LOGO_URL = "https://cdn.redoc.ly/redoc/logo-mini.svg"


@cache
def _redoc_bundle_text() -> str:
    path = finders.find("drf_spectacular_sidecar/redoc/bundles/redoc.standalone.js")
    text = Path(path).read_text(encoding="utf-8")
    if REDOC_LOGO_URL not in text:  # a new sidecar: look at its logo again (test_api_docs fails too)
        raise ImproperlyConfigured(f"the Redoc bundle no longer loads {REDOC_LOGO_URL}")
    return text.replace(REDOC_LOGO_URL, static("frontend/redoc-logo-mini.svg"))


@require_GET
def redoc_bundle(request):
    """Redoc's standalone bundle (a public library, like any static file) with the logo kept local."""
    response = HttpResponse(_redoc_bundle_text(), content_type="text/javascript; charset=utf-8")
    response["Cache-Control"] = "public, max-age=86400"
    return response


swagger_page = page_for(*DOCS_ROLES)(SwaggerPage.as_view())
# Redoc's bundle also writes one fixed stylesheet (perfect-scrollbar's) when it loads, before it reads
# the nonce: allowed by its hash (and the empty <style> it starts from). Both belong to the bundle of
# drf-spectacular-sidecar pinned in requirements.txt; tests/browser/test_api_docs.py fails if they change.
REDOC_STYLE_HASHES = ["'sha256-47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU='",
                      "'sha256-QMIg+bpjm3JdElJ388KYke01izlUW0UoNOeKjpMxdgc='"]
redoc_page = page_for(*DOCS_ROLES)(csp_update({"style-src": [NONCE, *REDOC_STYLE_HASHES]})(RedocPage.as_view()))
