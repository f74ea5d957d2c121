"""Which renderer answers: DRF's browsable API (HTML forms) only for staff.

Everyone else gets JSON even when their browser asks for HTML: the admin pages cover every task,
and DRF's form page is neither themed nor allowed by our CSP, so a rater or researcher who lands
on an /api/ URL sees the data, not a broken page."""
from __future__ import annotations

from rest_framework.exceptions import NotAcceptable
from rest_framework.negotiation import DefaultContentNegotiation
from rest_framework.renderers import BrowsableAPIRenderer

from annotation import roles


class StaffBrowsableContentNegotiation(DefaultContentNegotiation):
    def select_renderer(self, request, renderers, format_suffix=None):
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
