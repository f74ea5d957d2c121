"""Answers to a file download, wherever the file is stored (annotation/storage).

A local folder: the file streamed by this process (FileResponse). A bucket: by default a 302 to a
signed URL valid AWS_QUERYSTRING_EXPIRE seconds, so the store sends the bytes and the web process
holds none of them; with REJUDGE_STORAGE_DOWNLOADS=stream (a store the clients cannot reach),
streamed through this process in 1 MB blocks. The view checks permissions before calling this.

Given the request and the file's `etag`, the answer follows RFC 9110's conditional requests:
If-Match / If-None-Match / If-(Un)Modified-Since through Django's get_conditional_response (weak
comparison for If-None-Match, lists of tags, `*`: 304 for GET/HEAD; a failed If-Match is 412;
Last-Modified is the file's date as the caller gives it), and a single
byte range (`Range: bytes=N-`, `N-M`, `-S`) is answered 206 with Content-Range, or 416 with
`Content-Range: bytes */size` when it starts past the end; `If-Range` with our strong ETag keeps
the range, any other validator (another tag, a weak one, a date) gets the whole file. Several ranges at once, or a Range that does not parse, are ignored (the whole
file, 200), as RFC 9110 allows. Every file answer to such a call says `Accept-Ranges: bytes`. A redirect to a
bucket's signed URL leaves ranges to the store, which honours them itself.
"""
from __future__ import annotations

import re
from datetime import datetime

from django.conf import settings
from django.http import FileResponse, HttpResponse, HttpResponseRedirect, StreamingHttpResponse
from django.utils.cache import get_conditional_response
from django.utils.http import http_date
from rest_framework.exceptions import NotFound

from annotation.storage import (StoredFileMissing, area_is_local, stored_file_chunks, stored_file_exists,
                                         stored_file_open, stored_file_size, stored_file_url)

# ASCII digits only (\d would take '２' or '٨'), and positions read through _position.
_RANGE = re.compile(r"^[ \t]*bytes[ \t]*=[ \t]*([0-9]*)[ \t]*-[ \t]*([0-9]*)[ \t]*\Z", re.IGNORECASE)
_POSITION_MAX = 2**63 - 1  # past any file; a longer number means the same


def _position(digits: str) -> int:
    """A byte position of a Range header: never int() of thousands of digits (a ValueError)."""
    digits = digits.lstrip("0") or "0"
    return _POSITION_MAX if len(digits) > 18 else int(digits)


class RangeNotSatisfiable(Exception):
    pass


def requested_range(request, size: int, etag: str | None) -> tuple[int, int] | None:
    """The (first, last) byte the request's Range asks for, inclusive; None for the whole file;
    RangeNotSatisfiable when the one range it names lies past the end."""
    header = request.META.get("HTTP_RANGE", "")
    if not header or request.method not in ("GET", "HEAD"):
        return None
    if_range = request.META.get("HTTP_IF_RANGE")
    if if_range is not None:
        # A strong comparison (RFC 9110 13.1.5): our tag, not weak; a date is not used (a date
        # one second wide is no strong validator), so the whole file goes.
        if not etag or if_range.strip() != etag or etag.startswith("W/"):
            return None
    match = _RANGE.match(header)
    if not match or match.group(1) == match.group(2) == "":
        return None  # several ranges, another unit, or no numbers: ignored
    first, last = match.group(1), match.group(2)
    if first == "":  # a suffix: the last N bytes
        suffix = _position(last)
        if suffix == 0 or size == 0:
            raise RangeNotSatisfiable
        return max(0, size - suffix), size - 1
    first = _position(first)
    if last and _position(last) < first:
        return None  # not a valid range-spec: the field is ignored
    if first >= size:
        raise RangeNotSatisfiable
    return first, min(_position(last), size - 1) if last else size - 1


def stored_file_download(*, area: str, name: str, filename: str, content_type: str, missing: str,
                         headers: dict | None = None, request=None, etag: str | None = None,
                         last_modified: datetime | None = None) -> HttpResponse:
    """The response serving `name` from `area` as an attachment called `filename`; NotFound with
    the message `missing` when the file is not there. With `request` (and the file's quoted
    `etag`, and when it was last changed), conditional and range requests are answered as the
    module docstring says."""
    if not stored_file_exists(area, name):
        raise NotFound(missing)
    headers = dict(headers or {})
    if etag:
        headers["ETag"] = etag
    # Without a date, Django's check of If-Unmodified-Since fails every request (412), where RFC
    # 9110 says to ignore the field: a file served conditionally always has one.
    modified = int(last_modified.timestamp()) if last_modified is not None else None
    if modified is not None:
        headers["Last-Modified"] = http_date(modified)
    if request is not None and (etag or modified is not None):
        conditional = get_conditional_response(request, etag=etag, last_modified=modified)
        if conditional is not None:  # 304 Not Modified or 412 Precondition Failed
            for key in ("ETag", "Last-Modified"):
                if key in headers:
                    conditional[key] = headers[key]
            return conditional
    disposition = f'attachment; filename="{filename.replace(chr(34), "").replace(chr(92), "")}"'
    try:
        local = area_is_local(area)
        if not local and settings.REJUDGE_STORAGE_DOWNLOADS == "redirect":
            response = HttpResponseRedirect(stored_file_url(area, name, filename=filename, content_type=content_type))
            response["Cache-Control"] = "no-store"  # the signed URL expires; never cache the redirect
        else:
            size = stored_file_size(area, name)
            try:
                byte_range = requested_range(request, size, etag) if request is not None else None
            except RangeNotSatisfiable:
                response = HttpResponse(status=416)
                response["Content-Range"] = f"bytes */{size}"
                response["Accept-Ranges"] = "bytes"
                for key, value in headers.items():
                    response[key] = value
                return response
            if byte_range is not None:
                first, last = byte_range
                response = StreamingHttpResponse(stored_file_chunks(area, name, byte_range=byte_range),
                                                 status=206, content_type=content_type)
                response["Content-Length"] = str(last - first + 1)
                response["Content-Range"] = f"bytes {first}-{last}/{size}"
                response["Content-Disposition"] = disposition
            elif local:
                response = FileResponse(stored_file_open(area, name), as_attachment=True, filename=filename,
                                        content_type=content_type)
            else:
                response = StreamingHttpResponse(stored_file_chunks(area, name), content_type=content_type)
                response["Content-Length"] = str(size)
                response["Content-Disposition"] = disposition
            if request is not None:  # only callers that pass the request get ranges honoured
                response["Accept-Ranges"] = "bytes"
    except StoredFileMissing as exc:
        raise NotFound(missing) from exc
    for key, value in headers.items():
        response[key] = value
    return response
