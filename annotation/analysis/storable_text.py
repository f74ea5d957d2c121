"""Whether a string may be stored: as text in the database (`text_problem`) and as a clip's video
(`media_problem`). Plain rules with no Django, below both the file readers (formats/), which report
each problem with its file, line and field, and the models (Clip.playback_url), which play nothing
from media set another way that breaks them."""
from __future__ import annotations

import re
from urllib.parse import unquote, urlsplit

#: Clip.media is a CharField(max_length=1000).
MAX_MEDIA_LENGTH = 1000


def text_problem(value: str, *, max_length: int | None = None) -> str | None:
    """Why `value` cannot be stored as text, or None when it can."""
    if "\x00" in value:
        return f"contains a NUL character (byte 0x00) at position {value.index(chr(0)) + 1}"
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:  # half a surrogate pair, from a JSON escape such as \ud800
        return f"contains a character that is not text (a lone surrogate) at position {exc.start + 1}"
    if max_length is not None and len(value) > max_length:
        return f"is {len(value):,} characters long; at most {max_length:,} are allowed"
    return None


def media_problem(media: str) -> str | None:
    """Why `media` may not be a clip's video, or None when it may.

    A clip plays either from an http(s) URL or from a file under MEDIA_ROOT, named by a relative
    path. Anything else would let an imported file make the rater's page load a video (or run a
    `javascript:` URL) from wherever the file says: absolute paths, `..` segments, protocol-relative
    `//host/...` URLs and other schemes are refused, in a path also once percent-decoded.
    """
    if media == "":
        return None
    problem = text_problem(media, max_length=MAX_MEDIA_LENGTH)
    if problem:
        return problem
    if "\\" in media or any(ord(ch) < 32 or ord(ch) == 127 for ch in media):
        return "contains a backslash or a control character"
    if re.match(r"^[A-Za-z][A-Za-z0-9+.-]*:", media):
        parts = urlsplit(media)
        if parts.scheme.lower() not in ("http", "https") or not parts.netloc:
            return "is a URL that is not http(s)://host/...; use an http(s) URL or a path under MEDIA_ROOT"
        return None
    if media.startswith("/"):
        return ("starts with '/' (an absolute path, or a URL to another host); "
                "use a path relative to MEDIA_ROOT, or an http(s) URL")
    # The page puts the path in a URL (/media/<path>): a browser reads %2e%2e as '..' and a
    # backslash as '/', so `%2e%2e/%2e%2e/api/v1/me/` left /media/. Checked as the browser (or a
    # server decoding once more) would see it: decoded until stable, either slash a separator.
    decoded = _percent_decoded(media)
    if decoded != media:
        if any(ord(ch) < 32 or ord(ch) == 127 for ch in decoded):
            return "contains a percent-encoded control character"
        if decoded.startswith(("/", "\\")):
            return "starts with an encoded '/' or '\\' once percent-decoded; use a path relative to MEDIA_ROOT"
    if ".." in re.split(r"[/\\]", decoded):
        return "has a '..' segment (percent-encoded or not); a path must stay under MEDIA_ROOT"
    return None


def _percent_decoded(text: str) -> str:
    """`text` percent-decoded again and again until it no longer changes (%252e -> %2e -> .)."""
    for _ in range(len(text)):  # each pass that changes the text makes it shorter
        decoded = unquote(text)
        if decoded == text:
            break
        text = decoded
    return text
