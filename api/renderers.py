"""JSON responses that cannot fail on a stored number.

DRF's JSONRenderer refuses NaN and infinities (strict JSON): one odd value that reached the database
(a label's seconds of 1e308 stored before inputs were bounded, two of them averaging to infinity)
made a page answer 500 until someone edited the row. Such values render as null, which is what the
API already says for an undefined figure."""
from __future__ import annotations

from rest_framework import renderers

from annotation.provenance import json_ready


class JSONRenderer(renderers.JSONRenderer):
    def render(self, data, accepted_media_type=None, renderer_context=None):
        try:
            return super().render(data, accepted_media_type, renderer_context)
        except ValueError:  # "Out of range float values are not JSON compliant": rare, so walk only then
            return super().render(json_ready(data), accepted_media_type, renderer_context)
