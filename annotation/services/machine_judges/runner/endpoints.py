"""Registering the machine judges the platform runs itself (JudgeEndpoint), and reading their keys.

The base URL is an outbound request the admin chooses: the worker will POST frames of the
dataset's clips there. Only http and https are accepted, without credentials in the URL (they
would be stored in clear), a query or a fragment.

The API key is never stored, shown or logged. The endpoint keeps the NAME of an environment
variable of the worker, REJUDGE_JUDGE_KEY_<NAME>; its value is the key, or, when it is unset,
<that name>_FILE names a file holding it (a Docker or Kubernetes secret), as SECRET_KEY and
SECRET_KEY_FILE work in config/settings.py. A name, not a path, is stored so that an admin can
never make the worker read (and send) an arbitrary file.
"""
from __future__ import annotations

import os
import re
from pathlib import Path
from urllib.parse import urlsplit

from django.db import IntegrityError, transaction

from annotation.formats.judge_chat import PROMPTS
from annotation.models import JudgeEndpoint

KEY_ENV = re.compile(r"^REJUDGE_JUDGE_KEY_[A-Z0-9_]{1,60}$")
# Every field an admin may set, with its check; the REST serializer and the CLI take these names.
EDITABLE = ("name", "base_url", "model", "prompt_version", "frames_per_clip", "concurrency", "max_requests",
            "max_tokens", "temperature", "timeout_seconds", "max_retries", "key_env")


class JudgeEndpointError(ValueError):
    """A registration that cannot be stored; the message names the field and why."""


def base_url_check(url: str) -> str:
    url = (url or "").strip().rstrip("/")
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https"):
        raise JudgeEndpointError(f"base_url: only http:// and https:// URLs are accepted, not {url!r}")
    if not parts.hostname:
        raise JudgeEndpointError(f"base_url: {url!r} names no host")
    if parts.username or parts.password:
        raise JudgeEndpointError("base_url: credentials in the URL would be stored in clear; "
                                 "put the key in the environment and name it in key_env")
    if parts.query or parts.fragment:
        raise JudgeEndpointError("base_url: no query or fragment (the path /v1/chat/completions is added)")
    # .../v1 is how OpenAI clients are usually configured: accept it and keep the base.
    return url[: -len("/v1")] if url.endswith("/v1") else url


def key_env_check(name: str) -> str:
    name = (name or "").strip()
    if name and (not KEY_ENV.match(name) or name.endswith("_FILE")):
        raise JudgeEndpointError("key_env: the name of an environment variable REJUDGE_JUDGE_KEY_<NAME> "
                                 "(capitals, digits, _), not the key itself; <name>_FILE is read when it is unset")
    return name


def _clean(values: dict) -> dict:
    unknown = set(values) - set(EDITABLE)
    if unknown:
        raise JudgeEndpointError(f"unknown field(s): {', '.join(sorted(unknown))}")
    out = dict(values)
    if "name" in out:
        out["name"] = (out["name"] or "").strip()
        if not out["name"]:
            raise JudgeEndpointError("name: required")
    if "base_url" in out:
        out["base_url"] = base_url_check(out["base_url"])
    if "model" in out and not (out["model"] or "").strip():
        raise JudgeEndpointError("model: required (the model name the server serves)")
    if "prompt_version" in out and out["prompt_version"] not in PROMPTS:
        raise JudgeEndpointError(f"prompt_version: one of {', '.join(sorted(PROMPTS))}")
    if "key_env" in out:
        out["key_env"] = key_env_check(out["key_env"])
    ranges = {"frames_per_clip": (1, 64), "concurrency": (1, 256), "max_retries": (0, 10), "temperature": (0, 2),
              "timeout_seconds": (1, 3600), "max_requests": (1, 2**31 - 1), "max_tokens": (1, 2**63 - 1)}
    for field, (low, high) in ranges.items():
        value = out.get(field)
        if value is None:
            continue
        if value < low or (high is not None and value > high):
            raise JudgeEndpointError(f"{field}: must be from {low} to {high}")
    return out


def judge_endpoint_create(*, created_by=None, **values) -> JudgeEndpoint:
    values = _clean(values)
    for field in ("name", "base_url", "model"):
        if not values.get(field):
            raise JudgeEndpointError(f"{field}: required")
    try:
        with transaction.atomic():
            return JudgeEndpoint.objects.create(created_by=created_by, **values)
    except IntegrityError as exc:
        raise JudgeEndpointError(f"name: a judge named '{values['name']}' exists already") from exc


def judge_endpoint_update(*, endpoint: JudgeEndpoint, **values) -> JudgeEndpoint:
    values = _clean(values)
    for field, value in values.items():
        setattr(endpoint, field, value)
    try:
        with transaction.atomic():
            endpoint.save()
    except IntegrityError as exc:
        raise JudgeEndpointError(f"name: a judge named '{endpoint.name}' exists already") from exc
    return endpoint


def judge_endpoint_key(endpoint: JudgeEndpoint) -> str | None:
    """The key from the worker's environment, or None when the endpoint needs none. Raises
    JudgeEndpointError naming the variable (never its value) when it cannot be read."""
    name = endpoint.key_env
    if not name:
        return None
    value = os.environ.get(name, "").strip()
    if value:
        return value
    path = os.environ.get(f"{name}_FILE", "").strip()
    if not path:
        raise JudgeEndpointError(f"judge '{endpoint.name}': the worker has neither {name} nor {name}_FILE in its "
                                 "environment")
    try:
        value = Path(path).read_text().strip()
    except OSError as exc:
        raise JudgeEndpointError(f"judge '{endpoint.name}': {name}_FILE names a file that cannot be read "
                                 f"({type(exc).__name__})") from None
    if not value:
        raise JudgeEndpointError(f"judge '{endpoint.name}': the file {name}_FILE names is empty")
    return value
