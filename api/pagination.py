"""The one pagination of the API lists: limit/offset with a ceiling on the page size.

Without a ceiling `?limit=1000000` makes one request load and serialize a whole table (every label
of a pool, every job), which one script can repeat to tie up the server."""
from __future__ import annotations

from rest_framework.pagination import LimitOffsetPagination
from rest_framework.settings import api_settings

PAGE_SIZE = api_settings.PAGE_SIZE  # REST_FRAMEWORK["PAGE_SIZE"] in config/settings.py
MAX_PAGE_SIZE = 1000


class RejudgePagination(LimitOffsetPagination):
    """A larger `limit` is cut to MAX_PAGE_SIZE (the `next` link then pages on); a zero, negative
    or non-numeric one gives the default page."""

    default_limit = PAGE_SIZE
    max_limit = MAX_PAGE_SIZE
    limit_query_description = f"Number of results to return per page (default {PAGE_SIZE}, at most {MAX_PAGE_SIZE})."

    def get_schema_operation_parameters(self, view):
        parameters = super().get_schema_operation_parameters(view)
        for parameter in parameters:
            if parameter["name"] == self.limit_query_param:
                parameter["schema"] |= {"minimum": 1, "maximum": self.max_limit}
            elif parameter["name"] == self.offset_query_param:
                parameter["schema"] |= {"minimum": 0}
        return parameters
