"""Answers to a file download, wherever the file is stored (annotation/services/storage).

A local folder: the file streamed by this process (FileResponse). A bucket: by default a 302 to a
signed URL valid AWS_QUERYSTRING_EXPIRE seconds, so the store sends the bytes and the web process
holds none of them; with REJUDGE_STORAGE_DOWNLOADS=stream (a store the clients cannot reach),
streamed through this process in 1 MB blocks. The view checks permissions before calling this.
"""
from __future__ import annotations

from django.conf import settings
from django.http import FileResponse, HttpResponse, HttpResponseRedirect, StreamingHttpResponse
from rest_framework.exceptions import NotFound

from annotation.services.storage import (StoredFileMissing, area_is_local, stored_file_chunks, stored_file_exists,
                                         stored_file_open, stored_file_size, stored_file_url)


def stored_file_download(*, area: str, name: str, filename: str, content_type: str, missing: str,
                         headers: dict | None = None) -> HttpResponse:
    """The response serving `name` from `area` as an attachment called `filename`; NotFound with
    the message `missing` when the file is not there."""
    if not stored_file_exists(area, name):
        raise NotFound(missing)
    try:
        if area_is_local(area):
            response = FileResponse(stored_file_open(area, name), as_attachment=True, filename=filename,
                                    content_type=content_type)
        elif settings.REJUDGE_STORAGE_DOWNLOADS == "redirect":
            response = HttpResponseRedirect(stored_file_url(area, name, filename=filename, content_type=content_type))
            response["Cache-Control"] = "no-store"  # the signed URL expires; never cache the redirect
        else:
            response = StreamingHttpResponse(stored_file_chunks(area, name), content_type=content_type)
            response["Content-Length"] = str(stored_file_size(area, name))
            response["Content-Disposition"] = f'attachment; filename="{filename.replace(chr(34), "")}"'
    except StoredFileMissing as exc:
        raise NotFound(missing) from exc
    for key, value in (headers or {}).items():
        response[key] = value
    return response
