"""Clip files under MEDIA_ROOT, with HTTP Range support (clips in a bucket: a signed URL).

Browsers seek in a video by asking for byte ranges; a server that answers 200 with the whole
file (as Django's static serving does) makes seeking impossible. This view answers 206 Partial
Content for a single range, 416 for an unsatisfiable one, and 200 without a Range header.

Only admins and raters of a pool or ranking study using the clip get a file
(annotation/selectors/media.py); anyone else gets the 404 of a missing file, so the answer never
reveals which files exist. With the media area in a bucket (REJUDGE_STORAGE=s3) the same check
comes first, then a redirect to a signed URL valid REJUDGE_SIGNED_URL_SECONDS: only someone the
check let through ever gets one.
"""
from __future__ import annotations

import mimetypes
import re
from urllib.parse import quote
from pathlib import Path

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.http import FileResponse, Http404, HttpResponse, HttpResponseRedirect, StreamingHttpResponse
from django.utils._os import safe_join
from django.views.decorators.http import require_safe

from annotation.selectors.media import media_file_visible
from annotation.services.crowd.worker_tokens import QUERY_PARAMETER, WorkerTokenRefused, worker_from_token
from annotation.storage import StoredFileMissing, area_is_local, stored_file_exists, stored_file_url

RANGE_RE = re.compile(r"^bytes=(\d*)-(\d*)$")
CHUNK = 64 * 1024


def _file_range(path: Path, start: int, length: int):
    with path.open("rb") as handle:
        handle.seek(start)
        remaining = length
        while remaining > 0:
            block = handle.read(min(CHUNK, remaining))
            if not block:
                break
            remaining -= len(block)
            yield block


def parse_range(header: str, size: int) -> tuple[int, int] | None:
    """(first, last) byte positions, inclusive, for a single-range header; None if unsatisfiable."""
    match = RANGE_RE.match(header.strip())
    if not match or (match.group(1) == "" and match.group(2) == ""):
        return None
    first, last = match.groups()
    if first == "":  # suffix range: the last N bytes
        n = int(last)
        if n == 0:
            return None
        return max(0, size - n), size - 1
    first_i = int(first)
    last_i = size - 1 if last == "" else min(int(last), size - 1)
    if first_i >= size or last_i < first_i:
        return None
    return first_i, last_i


def _signed_redirect(path: str) -> HttpResponse:
    """Clips in a bucket: after the access check, a redirect to a short-lived signed URL; the
    store answers the player's Range requests itself (206)."""
    try:
        if not stored_file_exists("media", path):
            raise Http404("no such file")
        url = stored_file_url("media", path, content_type=mimetypes.guess_type(path)[0] or None)
    except StoredFileMissing as exc:
        raise Http404("no such file") from exc
    response = HttpResponseRedirect(url)
    # The browser may reuse the redirect while seeking, never past the URL's own expiry.
    expiry = getattr(settings, "AWS_QUERYSTRING_EXPIRE", 300)
    response["Cache-Control"] = f"private, max-age={max(0, min(60, expiry // 2))}"
    return response


def _study_worker(request):
    """An MTurk worker in MTurk's iframe (no cookie there): the page's worker token, as `wt`
    (a <video> sends no Authorization header). Only the worker's own clips pass the check below."""
    token = request.GET.get(QUERY_PARAMETER)
    if not token or request.user.is_authenticated:
        return None
    try:
        return worker_from_token(token).user
    except WorkerTokenRefused:
        return None


@require_safe
def media_file(request, path: str):
    worker_user = _study_worker(request)
    if worker_user is None:
        return _media_file_signed_in(request, path)
    request.user = worker_user
    return _media_file(request, path)


@login_required
def _media_file_signed_in(request, path: str):
    return _media_file(request, path)


def _media_file(request, path: str):
    if not media_file_visible(user=request.user, path=path):
        raise Http404("no such file")
    if not area_is_local("media"):
        return _signed_redirect(path)
    try:
        full = Path(safe_join(settings.MEDIA_ROOT, path))
    except Exception as exc:  # SuspiciousFileOperation: a path escaping MEDIA_ROOT
        raise Http404("no such file") from exc
    if not full.is_file():
        raise Http404("no such file")
    content_type = mimetypes.guess_type(full.name)[0] or "application/octet-stream"
    if settings.MEDIA_ACCEL_REDIRECT:
        # A front server (nginx) sends the bytes from an internal location, with Range support;
        # the access check above stays here, so the front server must not serve MEDIA_ROOT itself.
        response = HttpResponse(content_type=content_type)
        response["X-Accel-Redirect"] = settings.MEDIA_ACCEL_REDIRECT + quote(path)
        return response
    size = full.stat().st_size
    header = request.headers.get("Range")
    if not header:
        response = FileResponse(full.open("rb"), content_type=content_type)
        response["Accept-Ranges"] = "bytes"
        return response
    span = parse_range(header, size) if "," not in header else None
    if span is None:
        response = HttpResponse(status=416)
        response["Content-Range"] = f"bytes */{size}"
        return response
    first, last = span
    length = last - first + 1
    response = StreamingHttpResponse(_file_range(full, first, length), status=206, content_type=content_type)
    response["Content-Range"] = f"bytes {first}-{last}/{size}"
    response["Content-Length"] = str(length)
    response["Accept-Ranges"] = "bytes"
    response["Cache-Control"] = "private, max-age=3600"
    return response

