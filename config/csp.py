"""django-csp's middleware, with the site's own policy built once instead of on every response.

django-csp builds the Content-Security-Policy header from the settings on every response, twice
(the policy and the report-only one): about 0.1-0.2 ms, more than the rest of the middleware on the
queue's two requests per judged pair. A response that changes nothing of the policy (no nonce
used, no per-view decorator: every API answer) gets the same string each time, so that string is
built once per settings object and reused. Anything else (a nonce, `csp_update` / `csp_replace`
/ `csp_exempt`, a report-only policy, excluded URL prefixes, DEBUG's error pages) goes to
django-csp's own process_response, unchanged.
"""
from __future__ import annotations

from csp import middleware
from csp.constants import HEADER
from csp.utils import build_policy
from django.conf import settings

# What a view or decorator sets on a response to change or drop its policy (django-csp 4).
_PER_RESPONSE = ("_csp_config", "_csp_update", "_csp_replace", "_csp_exempt",
                 "_csp_config_ro", "_csp_update_ro", "_csp_replace_ro", "_csp_exempt_ro")


class CSPMiddleware(middleware.CSPMiddleware):
    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._built: tuple | None = None  # (the settings' policy dict, its header value)

    def _site_policy(self, policy: dict) -> str:
        built = self._built
        if built is None or built[0] is not policy:  # new settings (override_settings in a test)
            built = self._built = (policy, build_policy())
        return built[1]

    def process_response(self, request, response):
        policy = getattr(settings, "CONTENT_SECURITY_POLICY", None)
        plain = (policy and not policy.get("EXCLUDE_URL_PREFIXES")
                 and not getattr(settings, "CONTENT_SECURITY_POLICY_REPORT_ONLY", None)
                 and getattr(request, "_csp_nonce", None) is None and not settings.DEBUG
                 and not any(hasattr(response, name) for name in _PER_RESPONSE))
        if not plain:
            return super().process_response(request, response)
        if HEADER not in response:
            response[HEADER] = self._site_policy(policy)
        # As django-csp does: a nonce asked for after the header is written is an error, not a silent gap.
        request.csp_nonce = middleware.CheckableLazyObject(self._csp_nonce_post_response)
        return response
