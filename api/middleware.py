"""Refuses a request whose path or query string holds a NUL character, before any view sees it.

PostgreSQL can neither store nor compare text containing NUL: a lookup such as ?kind=a%00b or
/leases/a%00b/heartbeat/ made psycopg2 raise ValueError, an HTML 500. No id, token or filter of
this site can contain NUL, so the request is refused with a JSON 400 naming where it was."""
from __future__ import annotations

from django.http import JsonResponse

NUL = "\x00"


def _nul_at(request) -> str | None:
    if NUL in request.path:
        return "path"
    for name, values in request.GET.lists():
        if NUL in name or any(NUL in value for value in values):
            return name.replace(NUL, "\\x00")
    return None


class RefuseNulMiddleware:
    def __init__(self, get_response) -> None:
        self.get_response = get_response

    def __call__(self, request):
        where = _nul_at(request)
        if where is not None:
            return JsonResponse({where: ["must not contain a NUL character (%00)"]}, status=400)
        return self.get_response(request)
