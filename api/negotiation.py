"""Which renderer answers: DRF's browsable API (HTML forms) only for staff.

Everyone else gets JSON even when their browser asks for HTML: the admin pages cover every task,
and DRF's form page is neither themed nor allowed by our CSP, so a rater or researcher who lands
on an /api/ URL sees the data, not a broken page."""
from __future__ import annotations

from rest_framework.exceptions import NotAcceptable
from rest_framework.negotiation import DefaultContentNegotiation
from rest_framework.renderers import BrowsableAPIRenderer

from annotation import roles


# Accept headers that DRF's negotiation answers with the first renderer when it is JSON (as
# application/json): no header at all reads as */*.
_JSON_OR_ANYTHING = frozenset({"*/*", "application/json"})


class StaffBrowsableContentNegotiation(DefaultContentNegotiation):
    def select_renderer(self, request, renderers, format_suffix=None):
        # The queue's two calls per judged pair (and most API clients) ask for JSON or anything:
        # DRF's answer, the first renderer when it is JSON, without parsing the header and ranking
        # every renderer against it (3% of a worker's CPU on those calls).
        django_request = request._request
        if (not format_suffix and renderers and renderers[0].media_type == "application/json"
                and django_request.META.get("HTTP_ACCEPT", "*/*") in _JSON_OR_ANYTHING
                and not (self.settings.URL_FORMAT_OVERRIDE and self.settings.URL_FORMAT_OVERRIDE in django_request.GET)):
            return renderers[0], renderers[0].media_type
        renderer, media_type = super().select_renderer(request, renderers, format_suffix)
        if not isinstance(renderer, BrowsableAPIRenderer):
            return renderer, media_type
        # The session's user (Django's middleware), not DRF's: reading request.user here would
        # run the API authenticators before the view asks, and a browser brings a session anyway.
        if roles.is_admin(getattr(request._request, "user", None)):
            return renderer, media_type
        others = [r for r in renderers if not isinstance(r, BrowsableAPIRenderer)]
        if not others:
            return renderer, media_type
        try:
            return super().select_renderer(request, others, format_suffix)
        except NotAcceptable:  # a browser asking for text/html alone: JSON all the same
            return others[0], others[0].media_type
