"""The releases REST API (``/api/v1/releases/``): list, show, download and verify.

Nothing a server answers is trusted as sent (names.py): a release's name, version, sizes and file
list are checked before they become paths or limits; the API token goes only to the origin the
user configured (scheme, host and port of ``base_url``), and a pagination ``next`` link or an
``archive_url`` on another origin is refused; redirects are followed by this module, which
attaches the token only when the target is that origin again (a presigned object-storage URL
never gets it); every body read is bounded (JSON answers, error messages, the archive itself).
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional, Union
from urllib.parse import urljoin

import httpx

from .errors import APIError, RejudgeError, VerificationError
from .names import (check_byte_count, check_file_list, check_positive_int, check_release_name, check_sha256,
                    path_inside)
from .verify import DEFAULT_MAX_BYTES, extract_archive, verify_folder

_CHUNK = 1 << 20
#: A JSON answer (one page of the list, one release) larger than this is not the releases API.
MAX_JSON_BYTES = 32 << 20
#: What is read of an error answer for its message.
MAX_ERROR_BYTES = 64 << 10
#: Pages of the release list followed before the client gives up (100 releases a page).
MAX_PAGES = 1000
MAX_REDIRECTS = 10
_REDIRECT_STATUSES = {301, 302, 303, 307, 308}


def _origin(url) -> tuple:
    url = httpx.URL(str(url))
    default = {"http": 80, "https": 443}.get(url.scheme)
    return url.scheme, (url.host or "").lower(), url.port or default


@dataclass(frozen=True)
class Release:
    """One release as the API describes it (``raw`` keeps every field, known or not). Built by
    ``from_api``, which refuses a name, version, size, checksum or file list the platform would
    never send."""

    id: int
    name: str
    version: int
    slug: str
    title: str = ""
    dataset: Any = None
    created_at: Optional[str] = None
    sha256: Optional[str] = None
    bytes: Optional[int] = None
    archive_url: Optional[str] = None
    files: Optional[list] = None
    raw: dict = field(default_factory=dict, repr=False, compare=False)

    @property
    def folder_name(self) -> str:
        """The archive's single top folder, and the folder ``download`` creates."""
        return f"{self.name}-v{self.version}"

    @classmethod
    def from_api(cls, data: Any, url: str) -> "Release":
        if not isinstance(data, dict) or not {"id", "name", "version"} <= data.keys():
            raise APIError(f"GET {url}: expected a release with id, name and version, got {str(data)[:200]}", url=url)
        where = f"GET {url}"
        rid = check_positive_int(data["id"], "id", where)
        name = check_release_name(data["name"], where)
        version = check_positive_int(data["version"], "version", where)
        slug = f"{name}@v{version}"
        if data.get("slug") not in (None, slug):
            raise APIError(f"{where}: field 'slug' is {str(data['slug'])[:100]!r}, but name and version make "
                           f"'{slug}'; refused", url=url)
        sha256 = check_sha256(data["sha256"], "sha256", where) if data.get("sha256") is not None else None
        size = check_byte_count(data["bytes"], "bytes", where) if data.get("bytes") is not None else None
        files = check_file_list(data["files"], where) if data.get("files") is not None else None
        archive_url = data.get("archive_url")
        if archive_url is not None and not isinstance(archive_url, str):
            raise APIError(f"{where}: field 'archive_url' is not text; refused", url=url)
        return cls(id=rid, name=name, version=version, slug=slug, title=str(data.get("title") or ""),
                   dataset=data.get("dataset"), created_at=data.get("created_at"), sha256=sha256, bytes=size,
                   archive_url=archive_url, files=files, raw=data)


class Client:
    """``Client("https://rejudge.example.org", token="...")``; the token is a DRF API token (the
    researcher's, from the platform), or None where the server allows anonymous release reads.

    The token is sent only to ``base_url``'s origin. ``max_bytes`` bounds what one download may
    write: the archive, and the sum of the sizes its files declare (default 20 GiB)."""

    def __init__(self, base_url: str, token: Optional[str] = None, *, timeout: float = 60.0,
                 http: Optional[httpx.Client] = None, max_bytes: int = DEFAULT_MAX_BYTES):
        base = base_url.rstrip("/") + "/"
        if httpx.URL(base).scheme not in ("http", "https"):
            raise RejudgeError(f"{base_url}: the server's address must start with https:// (or http://)")
        self.api_root = base if base.endswith("/api/v1/") else urljoin(base, "api/v1/")
        self.origin = _origin(self.api_root)
        self.max_bytes = int(max_bytes)
        self._token = token or None
        # Redirects are followed by _open, not by httpx: it decides per hop whether the token goes.
        self._http = http or httpx.Client(headers={"Accept": "application/json", "User-Agent": "rejudge-client"},
                                          timeout=timeout, follow_redirects=False)

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- requests ------------------------------------------------------------------------------

    def _own(self, url: str, what: str) -> str:
        """``url`` when it is on the configured origin; otherwise an APIError (a server that points
        the client elsewhere, with the token, is not followed)."""
        if _origin(url) != self.origin:
            scheme, host, port = self.origin
            raise APIError(f"{what} points to {url}, which is not the server you configured "
                           f"({scheme}://{host}:{port}); refused, so your token never goes there", url=url)
        return url

    def _open(self, url: str, headers: Optional[dict] = None) -> httpx.Response:
        """A streamed GET of ``url``, redirects followed here: the token is attached to a request
        only when its URL is on the configured origin, so a redirect to object storage (or
        anywhere else) never carries it. The caller closes the response."""
        for _ in range(MAX_REDIRECTS + 1):
            if httpx.URL(url).scheme not in ("http", "https"):
                raise APIError(f"GET {url}: not an http(s) address; refused", url=url)
            # identity: what is read is what the server sent, counted and capped as it arrives (a
            # compressed body would be inflated a chunk at a time, each without bound)
            sent = {"Accept-Encoding": "identity", **(headers or {})}
            if self._token and _origin(url) == self.origin:
                sent["Authorization"] = f"Token {self._token}"
            try:
                resp = self._http.send(self._http.build_request("GET", url, headers=sent), stream=True,
                                       follow_redirects=False)
            except httpx.InvalidURL as exc:  # httpx reads a redirect's Location (`data:,x`) even unfollowed
                raise APIError(f"GET {url}: answered a redirect to a Location that is no http(s) URL; refused",
                               url=url) from exc
            except httpx.HTTPError as exc:
                raise APIError(f"GET {url}: {exc}", url=url) from exc
            location = resp.headers.get("location")
            if resp.status_code not in _REDIRECT_STATUSES or not location:
                encoding = resp.headers.get("content-encoding", "identity").strip().lower()
                if encoding not in ("", "identity"):
                    resp.close()
                    raise APIError(f"GET {url}: the answer is compressed ({encoding[:40]!r}) although 'identity' "
                                   f"was asked for; refused, so that it is never inflated", status=resp.status_code,
                                   url=url)
                return resp
            resp.close()
            url = urljoin(str(resp.url), location)
        raise APIError(f"GET {url}: more than {MAX_REDIRECTS} redirects; refused", url=url)

    # -- reading -------------------------------------------------------------------------------

    def _get_json(self, url: str) -> Any:
        resp = self._open(url)
        try:
            _raise_for_status(resp)
            return _read_json(resp, url, hint=f" (is {self.api_root} a Rejudge server?)")
        finally:
            resp.close()

    def releases(self) -> list:
        """Every release the caller may read, following the list's pages (on the configured origin
        only: a ``next`` link elsewhere is refused)."""
        url: Optional[str] = urljoin(self.api_root, "releases/")
        out, seen = [], set()
        while url and url not in seen:
            if len(seen) >= MAX_PAGES:
                raise APIError(f"GET {url}: more than {MAX_PAGES} pages of releases; refused", url=url)
            seen.add(url)
            page = self._get_json(url)
            if isinstance(page, list):  # an unpaginated list is accepted as one page
                page = {"results": page, "next": None}
            if not isinstance(page, dict) or not isinstance(page.get("results"), list):
                raise APIError(f"GET {url}: expected {{count, next, previous, results}}", url=url)
            out.extend(Release.from_api(item, url) for item in page["results"])
            following = page.get("next")
            if following is not None and not isinstance(following, str):
                raise APIError(f"GET {url}: field 'next' is not a link; refused", url=url)
            url = self._own(urljoin(url, following), f"GET {url}: the next page") if following else None
        return out

    def release(self, id_or_slug: Union[int, str, Release]) -> Release:
        """One release with its file list: by id (``12``), slug (``msrvtt-fire@v2``) or name
        (``msrvtt-fire``: its newest version)."""
        if isinstance(id_or_slug, Release):
            id_or_slug = id_or_slug.id
        if isinstance(id_or_slug, int) or str(id_or_slug).isdigit():
            url = urljoin(self.api_root, f"releases/{int(id_or_slug)}/")
            rel = Release.from_api(self._get_json(url), url)
            if rel.id != int(id_or_slug):
                raise APIError(f"GET {url}: asked for release {int(id_or_slug)}, the answer is release {rel.id}; "
                               f"refused", url=url)
            return rel
        wanted = str(id_or_slug)
        every = self.releases()
        if "@" in wanted:
            matches = [r for r in every if r.slug == wanted]
        else:
            matches = sorted((r for r in every if r.name == wanted), key=lambda r: r.version)[-1:]
        if not matches:
            known = ", ".join(r.slug for r in every[:20]) or "none"
            raise APIError(f"no release '{wanted}' on {self.api_root} (releases: {known})", status=404)
        return self.release(matches[0].id)

    # -- submitting ----------------------------------------------------------------------------

    def submit(self, release: Union[int, str, Release], run_path, *, name: str, wait: bool = True,
               timeout: float = 600.0, poll: float = 2.0, idempotency_key: Optional[str] = None,
               max_depth: Optional[int] = None, holes_depth: Optional[int] = None) -> dict:
        """Submits a TREC run file to a release (``POST releases/{id}/submissions/``) and, with
        ``wait``, polls it until its scoring job is done; returns the submission as the API gives it:
        ``state`` (scored, or failed with the job's ``errors`` naming file, line and field) and
        ``summary`` (the measures against the release's qrels.txt, Judged@K, holes per query).

        One ``Idempotency-Key`` (yours, or a new one) goes with the request, so sending it again
        after a lost answer gives back the first submission, not a second one."""
        rel_id = release.id if isinstance(release, Release) else (
            int(release) if isinstance(release, int) or str(release).isdigit() else self.release(release).id)
        url = urljoin(self.api_root, f"releases/{rel_id}/submissions/")
        path = Path(run_path)
        fields = {"name": name}
        if max_depth is not None:
            fields["max_depth"] = str(int(max_depth))
        if holes_depth is not None:
            fields["holes_depth"] = str(int(holes_depth))
        headers = {"Accept-Encoding": "identity", "Idempotency-Key": idempotency_key or uuid.uuid4().hex}
        if self._token:
            headers["Authorization"] = f"Token {self._token}"
        try:
            with open(path, "rb") as fh:
                request = self._http.build_request("POST", url, data=fields,
                                                   files={"file": (path.name, fh, "text/plain")}, headers=headers)
                resp = self._http.send(request, stream=True, follow_redirects=False)
        except httpx.HTTPError as exc:
            raise APIError(f"POST {url}: {exc}", url=url) from exc
        try:
            _raise_for_status(resp)
            submission = _json_of(resp, url)
        finally:
            resp.close()
        if not wait:
            return submission
        detail = self._own(urljoin(url, str(submission.get("url") or "")), f"POST {url}: the submission's url")
        deadline = time.monotonic() + timeout
        while submission.get("state") not in _SUBMISSION_DONE:
            if time.monotonic() > deadline:
                raise RejudgeError(f"submission {submission.get('id')} is still being scored after {timeout:g} s; "
                                   f"ask again later: GET {detail}")
            time.sleep(poll)
            submission = self._get_json(detail)
            if not isinstance(submission, dict):
                raise APIError(f"GET {detail}: expected a submission, got {str(submission)[:200]}", url=detail)
        return submission

    # -- downloading ---------------------------------------------------------------------------

    def download(self, release: Union[int, str, Release], dest_dir, *, keep_archive: bool = False) -> Path:
        """Downloads a release into ``dest_dir/<name>-v<N>/`` and verifies it; returns that folder.

        The archive is streamed to ``dest_dir/.<name>-v<N>.zip.part`` and checked against the API's
        ``sha256`` and ``bytes`` (never more than ``bytes`` is written); an interrupted download is
        resumed by the next call (an HTTP range request; a server that ignores it sends the whole
        archive, which restarts the file). The archive is extracted into a temporary folder beside
        the destination, every entry's size checked against release.json's and the API's file
        list before it is written, then every file against SHA256SUMS and release.json, and only
        then is the folder renamed into place: a mismatch raises VerificationError naming the file
        and leaves no folder behind. A folder already there is verified and returned."""
        rel = release if isinstance(release, Release) and release.files is not None else self.release(release)
        if not rel.sha256:
            raise APIError(f"release {rel.slug}: the server gives no sha256, so the archive cannot be verified")
        if rel.bytes is None:
            raise APIError(f"release {rel.slug}: the server gives no size ('bytes'), so the download cannot be bounded")
        if rel.bytes > self.max_bytes:
            raise VerificationError(f"release {rel.slug}: the archive is {rel.bytes} bytes, more than this client's "
                                    f"limit of {self.max_bytes} (Client(max_bytes=...)); nothing was downloaded")
        dest = Path(dest_dir)
        dest.mkdir(parents=True, exist_ok=True)
        dest = dest.resolve()
        # The name and version were checked against the server's slug rule (names.py); these
        # checks keep every path the download makes inside dest whatever that rule lets through.
        final = path_inside(dest, rel.folder_name)
        part = path_inside(dest, f".{rel.folder_name}.zip.part")
        kept = path_inside(dest, f"{rel.folder_name}.zip")
        if final.exists():
            verify_folder(final, rel.files)
            return final
        self._fetch(rel, part)
        tmp = Path(tempfile.mkdtemp(prefix=f".{rel.folder_name}.", suffix=".extracting", dir=dest))
        try:
            try:
                folder = extract_archive(part, tmp, rel.folder_name, expected_files=rel.files,
                                         max_bytes=self.max_bytes)
                verify_folder(folder, rel.files)
            except RejudgeError:
                # The archive matched the server's checksum, so fetching it again gives the same
                # bytes: nothing is kept to resume from.
                part.unlink()
                raise
            os.replace(folder, final)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        if keep_archive:
            os.replace(part, kept)
        else:
            part.unlink()
        return final

    def _archive_url(self, rel: Release) -> str:
        if rel.archive_url:
            return self._own(urljoin(self.api_root, rel.archive_url), f"release {rel.slug}: its archive_url")
        return urljoin(self.api_root, f"releases/{rel.id}/archive/")

    def _fetch(self, rel: Release, part: Path) -> None:
        expected = int(rel.bytes)
        have = part.stat().st_size if part.exists() else 0
        if have > expected:
            part.unlink()
            have = 0
        digest = hashlib.sha256()
        if have:
            with open(part, "rb") as fh:
                for chunk in iter(lambda: fh.read(_CHUNK), b""):
                    digest.update(chunk)
        if have < expected:
            url = self._archive_url(rel)
            # identity: a range of a compressed transfer would not be a range of the archive
            headers = {"Accept": "*/*", "Accept-Encoding": "identity"}
            if have:
                # No If-Range: the request may be redirected to object storage, whose ETag is not
                # the platform's, and a mismatch there would send the whole archive every time. A
                # release never changes, and the whole file is checked against sha256 below.
                headers["Range"] = f"bytes={have}-"
            restart = too_long = False
            resp = self._open(url, headers)
            try:
                resumed = bool(have) and resp.status_code == 206 and \
                    resp.headers.get("content-range", "") == f"bytes {have}-{expected - 1}/{expected}"
                if have and resp.status_code in (206, 416) and not resumed:
                    # The part file no longer fits what the server sends: start again.
                    restart = True
                else:
                    if not resumed:
                        _raise_for_status(resp)
                        digest = hashlib.sha256()
                        have = 0
                    with open(part, "ab" if resumed else "wb") as fh:
                        for chunk in resp.iter_bytes():  # as received: a cut keeps every byte
                            room = expected - have
                            if len(chunk) > room:  # never more than the API announced
                                chunk, too_long = chunk[:room], True
                            fh.write(chunk)
                            digest.update(chunk)
                            have += len(chunk)
                            if too_long:
                                break
            except httpx.HTTPError as exc:
                got = part.stat().st_size if part.exists() else 0
                raise RejudgeError(f"downloading {rel.slug} stopped at {got} of {expected} bytes ({exc}); "
                                   f"run the download again to resume") from exc
            finally:
                resp.close()
            if too_long:
                part.unlink()
                raise VerificationError(f"archive of {rel.slug}: the server sent more than the {expected} bytes it "
                                        f"announced; stopped there and removed the partial file", path=part.name)
            if restart:
                part.unlink()
                return self._fetch(rel, part)
        size = part.stat().st_size
        if size < expected:
            raise RejudgeError(f"downloading {rel.slug} stopped at {size} of {expected} bytes; "
                               f"run the download again to resume")
        actual = digest.hexdigest()
        if size != expected or actual != rel.sha256:
            part.unlink()
            raise VerificationError(f"archive of {rel.slug}: {size} bytes with SHA-256 {actual}, the server announced "
                                    f"{expected} bytes with SHA-256 {rel.sha256}; the partial file was removed, "
                                    f"so a new download starts from scratch", path=part.name)


#: A submission's states after which nothing more happens without an admin.
_SUBMISSION_DONE = ("scored", "failed", "accepted")


def _read_json(resp: httpx.Response, url: str, *, hint: str = "") -> Any:
    """A streamed answer's JSON, read up to MAX_JSON_BYTES (a larger answer is not the API's)."""
    what = f"{resp.request.method} {url}"
    text = bytearray()
    try:
        for chunk in resp.iter_bytes():
            text += chunk
            if len(text) > MAX_JSON_BYTES:
                raise APIError(f"{what}: the answer is larger than {MAX_JSON_BYTES} bytes; not the Rejudge API, "
                               f"refused", status=resp.status_code, url=url)
    except httpx.HTTPError as exc:
        raise APIError(f"{what}: {exc}", url=url) from exc
    try:
        return json.loads(bytes(text))
    except ValueError as exc:
        raise APIError(f"{what}: the answer is not JSON{hint}", status=resp.status_code, url=url) from exc


def _json_of(resp: httpx.Response, url: str) -> dict:
    """A submission's answer: a JSON object."""
    body = _read_json(resp, url)
    if not isinstance(body, dict):
        raise APIError(f"{resp.request.method} {url}: expected a submission, got {str(body)[:200]}", url=url)
    return body


def _raise_for_status(resp: httpx.Response) -> None:
    if resp.status_code < 400:
        return
    text = b""
    try:
        for chunk in resp.iter_bytes():
            text += chunk
            if len(text) >= MAX_ERROR_BYTES:
                break
    except httpx.HTTPError:
        pass
    try:
        body = json.loads(text)
        detail = body.get("detail", body) if isinstance(body, dict) else body
    except ValueError:
        detail = text[:200].decode("utf-8", "replace")
    detail = str(detail)[:300]
    hint = ""
    if resp.status_code in (401, 403):
        hint = " (pass an API token: Client(url, token=...), or REJUDGE_TOKEN for the command line)"
    raise APIError(f"{resp.request.method} {resp.request.url}: {resp.status_code} {resp.reason_phrase}: {detail}{hint}",
                   status=resp.status_code, url=str(resp.request.url))
