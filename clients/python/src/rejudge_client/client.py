"""The releases REST API (``/api/v1/releases/``): list, show, download and verify."""
from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional, Union
from urllib.parse import urljoin

import httpx

from .errors import APIError, RejudgeError, VerificationError
from .verify import extract_archive, verify_folder

_CHUNK = 1 << 20


@dataclass(frozen=True)
class Release:
    """One release as the API describes it (``raw`` keeps every field, known or not)."""

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
        return cls(id=data["id"], name=data["name"], version=int(data["version"]),
                   slug=data.get("slug") or f"{data['name']}@v{data['version']}", title=data.get("title") or "",
                   dataset=data.get("dataset"), created_at=data.get("created_at"), sha256=data.get("sha256"),
                   bytes=data.get("bytes"), archive_url=data.get("archive_url"), files=data.get("files"), raw=data)


class Client:
    """``Client("https://rejudge.example.org", token="...")``; the token is a DRF API token (the
    researcher's, from the platform), or None where the server allows anonymous release reads."""

    def __init__(self, base_url: str, token: Optional[str] = None, *, timeout: float = 60.0,
                 http: Optional[httpx.Client] = None):
        base = base_url.rstrip("/") + "/"
        self.api_root = base if base.endswith("/api/v1/") else urljoin(base, "api/v1/")
        headers = {"Accept": "application/json", "User-Agent": "rejudge-client"}
        if token:
            headers["Authorization"] = f"Token {token}"
        # Redirects are followed: the archive may be a presigned object-storage URL, and httpx
        # drops the Authorization header when a redirect leaves the API's origin.
        self._http = http or httpx.Client(headers=headers, timeout=timeout, follow_redirects=True)

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- reading -------------------------------------------------------------------------------

    def _get_json(self, url: str) -> Any:
        try:
            resp = self._http.get(url)
        except httpx.HTTPError as exc:
            raise APIError(f"GET {url}: {exc}", url=url) from exc
        _raise_for_status(resp)
        try:
            return resp.json()
        except ValueError as exc:
            raise APIError(f"GET {url}: the answer is not JSON (is {self.api_root} a Rejudge server?)",
                           status=resp.status_code, url=url) from exc

    def releases(self) -> list:
        """Every release the caller may read, following the list's pages."""
        url: Optional[str] = urljoin(self.api_root, "releases/")
        out, seen = [], set()
        while url and url not in seen:
            seen.add(url)
            page = self._get_json(url)
            if isinstance(page, list):  # an unpaginated list is accepted as one page
                page = {"results": page, "next": None}
            if not isinstance(page, dict) or not isinstance(page.get("results"), list):
                raise APIError(f"GET {url}: expected {{count, next, previous, results}}", url=url)
            out.extend(Release.from_api(item, url) for item in page["results"])
            url = urljoin(url, page["next"]) if page.get("next") else None
        return out

    def release(self, id_or_slug: Union[int, str, Release]) -> Release:
        """One release with its file list: by id (``12``), slug (``msrvtt-fire@v2``) or name
        (``msrvtt-fire``: its newest version)."""
        if isinstance(id_or_slug, Release):
            id_or_slug = id_or_slug.id
        if isinstance(id_or_slug, int) or str(id_or_slug).isdigit():
            url = urljoin(self.api_root, f"releases/{int(id_or_slug)}/")
            return Release.from_api(self._get_json(url), url)
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

    # -- downloading ---------------------------------------------------------------------------

    def download(self, release: Union[int, str, Release], dest_dir, *, keep_archive: bool = False) -> Path:
        """Downloads a release into ``dest_dir/<name>-v<N>/`` and verifies it; returns that folder.

        The archive is streamed to ``dest_dir/.<name>-v<N>.zip.part`` and checked against the API's
        ``sha256`` and ``bytes``; an interrupted download is resumed by the next call (an HTTP range
        request; a server that ignores it sends the whole archive, which restarts the file). The
        archive is extracted into a temporary folder beside the destination, every file is checked
        against SHA256SUMS and release.json, and only then is the folder renamed into place: a
        mismatch raises VerificationError naming the file and leaves no folder behind. A folder
        already there is verified and returned."""
        rel = release if isinstance(release, Release) and release.files is not None else self.release(release)
        if not rel.sha256:
            raise APIError(f"release {rel.slug}: the server gives no sha256, so the archive cannot be verified")
        dest = Path(dest_dir)
        dest.mkdir(parents=True, exist_ok=True)
        final = dest / rel.folder_name
        if final.exists():
            verify_folder(final, rel.files)
            return final
        part = dest / f".{rel.folder_name}.zip.part"
        self._fetch(rel, part)
        tmp = Path(tempfile.mkdtemp(prefix=f".{rel.folder_name}.", suffix=".extracting", dir=dest))
        try:
            try:
                folder = extract_archive(part, tmp, rel.folder_name)
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
            os.replace(part, dest / f"{rel.folder_name}.zip")
        else:
            part.unlink()
        return final

    def _archive_url(self, rel: Release) -> str:
        if rel.archive_url:
            return urljoin(self.api_root, rel.archive_url)
        return urljoin(self.api_root, f"releases/{rel.id}/archive/")

    def _fetch(self, rel: Release, part: Path) -> None:
        expected = int(rel.bytes) if rel.bytes is not None else None
        have = part.stat().st_size if part.exists() else 0
        if expected is not None and have > expected:
            part.unlink()
            have = 0
        digest = hashlib.sha256()
        if have:
            with open(part, "rb") as fh:
                for chunk in iter(lambda: fh.read(_CHUNK), b""):
                    digest.update(chunk)
        if expected is None or have < expected:
            url = self._archive_url(rel)
            # identity: a range of a compressed transfer would not be a range of the archive
            headers = {"Accept": "*/*", "Accept-Encoding": "identity"}
            if have:
                headers["Range"] = f"bytes={have}-"
            restart = False
            try:
                with self._http.stream("GET", url, headers=headers) as resp:
                    resumed = bool(have) and resp.status_code == 206 and \
                        resp.headers.get("content-range", "").startswith(f"bytes {have}-")
                    if have and resp.status_code in (206, 416) and not resumed:
                        # The part file no longer fits what the server sends: start again.
                        restart = True
                    else:
                        if not resumed:
                            _raise_for_status(resp)
                            digest = hashlib.sha256()
                        with open(part, "ab" if resumed else "wb") as fh:
                            for chunk in resp.iter_bytes():  # as received: a cut keeps every byte
                                fh.write(chunk)
                                digest.update(chunk)
            except httpx.HTTPError as exc:
                got = part.stat().st_size if part.exists() else 0
                raise RejudgeError(f"downloading {rel.slug} stopped at {got} of {expected or '?'} bytes ({exc}); "
                                   f"run the download again to resume") from exc
            if restart:
                part.unlink()
                return self._fetch(rel, part)
        size = part.stat().st_size
        if expected is not None and size < expected:
            raise RejudgeError(f"downloading {rel.slug} stopped at {size} of {expected} bytes; "
                               f"run the download again to resume")
        actual = digest.hexdigest()
        if (expected is not None and size != expected) or actual != rel.sha256.lower():
            part.unlink()
            raise VerificationError(f"archive of {rel.slug}: {size} bytes with SHA-256 {actual}, the server announced "
                                    f"{expected} bytes with SHA-256 {rel.sha256}; the partial file was removed, "
                                    f"so a new download starts from scratch", path=part.name)


def _raise_for_status(resp: httpx.Response) -> None:
    if resp.status_code < 400:
        return
    try:
        resp.read()
        body = resp.json()
        detail = body.get("detail", body) if isinstance(body, dict) else body
    except ValueError:
        detail = resp.text[:200]
    hint = ""
    if resp.status_code in (401, 403):
        hint = " (pass an API token: Client(url, token=...), or REJUDGE_TOKEN for the command line)"
    raise APIError(f"{resp.request.method} {resp.request.url}: {resp.status_code} {resp.reason_phrase}: {detail}{hint}",
                   status=resp.status_code, url=str(resp.request.url))
