"""Registering the machine judges the platform runs itself (JudgeEndpoint), and reading their keys.

The base URL is an outbound request the admin chooses: the worker will POST frames of the
dataset's clips there. It must pass the outbound policy (annotation/services/outbound.py: http or
https, no credentials, whitespace, query or fragment, an allowed port, a host that resolves to an
address the policy admits) when it is registered or changed, and again when a run starts, whose
requests go to the address checked then.

The API key is never stored, shown or logged. The endpoint keeps the NAME of an environment
variable of the worker, REJUDGE_JUDGE_KEY_<NAME>; its value is the key, or, when it is unset,
<that name>_FILE names a file holding it (a Docker or Kubernetes secret), as SECRET_KEY and
SECRET_KEY_FILE work in config/settings.py. A name, not a path, is stored so that an admin can
never make the worker read (and send) an arbitrary file. The key goes only to the hosts the
operator declared for it (REJUDGE_JUDGE_KEY_<NAME>_HOSTS, see ..keys): checked at registration and
change, and again before a run sends anything.

Every change of a judge's base URL or key variable (and its registration) is recorded as a
JudgeEndpointChange row (who, when, old, new) and a log line `judge endpoint changed`.
"""
from __future__ import annotations

import hashlib
import logging
import os
from pathlib import Path

from django.db import IntegrityError, transaction
from django.utils import timezone

from annotation.formats.judge_chat import DEFAULT_PROMPT, PROMPTS
from annotation.models import JudgeEndpoint, JudgeEndpointChange
from annotation.services.machine_judges.runner.client import CONCURRENCY_MAX
from annotation.services.machine_judges.keys import COMPANIONS, KEY_ENV, KeyBindingRefused, key_binding_check
from annotation.services.outbound import OutboundRefused, PinnedBackend, Policy, destination_check, pinned_backend, \
    policy_from_settings, url_check

log = logging.getLogger("rejudge.judges")

# Every field an admin may set, with its check; the REST serializer and the CLI take these names.
EDITABLE = ("name", "base_url", "model", "prompt_version", "frames_per_clip", "concurrency", "max_requests",
            "max_tokens", "temperature", "timeout_seconds", "max_retries", "key_env")
AUDITED = ("base_url", "key_env")


class JudgeEndpointError(ValueError):
    """A registration that cannot be stored; the message names the field and why."""


def base_url_check(url: str, *, policy: Policy | None = None) -> str:
    """The base URL as stored (scheme and host lower-case, the default port and a trailing / or
    /v1 dropped), once its text and the addresses its host resolves to pass the outbound policy."""
    if not isinstance(url, str):
        raise JudgeEndpointError("base_url: a URL")
    policy = policy if policy is not None else policy_from_settings()
    try:
        target = url_check(url, policy=policy, allow_query=False, what="base_url")
        path = target.path.rstrip("/")
        # .../v1 is how OpenAI clients are usually configured: accept it and keep the base.
        path = path[: -len("/v1")] if path.endswith("/v1") else path
        normalised = type(target)(target.scheme, target.host, target.port, path, None).url
        destination_check(normalised, policy=policy, allow_query=False, what="base_url")
    except OutboundRefused as exc:
        raise JudgeEndpointError(str(exc)) from None
    return normalised


def key_env_check(name: str) -> str:
    name = (name or "").strip()
    if name and (not KEY_ENV.match(name) or name.endswith(COMPANIONS)):
        raise JudgeEndpointError("key_env: the name of an environment variable REJUDGE_JUDGE_KEY_<NAME> "
                                 "(capitals, digits, _), not the key itself; <name>_FILE is read when it is unset, "
                                 "<name>_HOSTS lists where it may be sent")
    return name


def judge_endpoint_identity(endpoint: JudgeEndpoint) -> str:
    """What answers a judge's requests, as the verdict cache keys it: the SHA-256 of the normalised
    base URL and the key variable. A judge whose URL or key changed asks again; two judges at the
    same URL with the same key share their answers."""
    base_url = endpoint.base_url
    try:
        base_url = url_check(base_url, policy=Policy(allow_port_ranges=((1, 65535),)), allow_query=False).url
    except OutboundRefused:
        pass  # refused at run time anyway; the identity stays the stored text
    return hashlib.sha256(f"{base_url}\n{endpoint.key_env}".encode()).hexdigest()


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
    ranges = {"frames_per_clip": (1, 64), "concurrency": (1, CONCURRENCY_MAX), "max_retries": (0, 10), "temperature": (0, 2),
              "timeout_seconds": (1, 3600), "max_requests": (1, 2**31 - 1), "max_tokens": (1, 2**63 - 1)}
    for field, (low, high) in ranges.items():
        value = out.get(field)
        if value is None:
            continue
        if value < low or (high is not None and value > high):
            raise JudgeEndpointError(f"{field}: must be from {low} to {high}")
    return out


def _key_binding(key_env: str, base_url: str) -> None:
    try:
        key_binding_check(key_env, base_url)
    except KeyBindingRefused as exc:
        raise JudgeEndpointError(str(exc)) from None


def _audit(endpoint: JudgeEndpoint, before: dict, changed_by) -> None:
    """One JudgeEndpointChange row and one log line per audited field whose value changed."""
    now = timezone.now()
    for field in AUDITED:
        old, new = before.get(field, ""), getattr(endpoint, field)
        if old == new:
            continue
        JudgeEndpointChange.objects.create(endpoint=endpoint, endpoint_name=endpoint.name, field=field, old_value=old,
                                           new_value=new, changed_by=changed_by, changed_at=now)
        who = getattr(changed_by, "username", None)
        log.info("judge endpoint changed: %s of judge %s '%s' from %r to %r by %s", field, endpoint.pk, endpoint.name,
                 old, new, who or "(unknown)", extra={"judge_endpoint": endpoint.pk, "judge_name": endpoint.name,
                                                      "field": field, "old": old, "new": new, "changed_by": who})


def judge_endpoint_create(*, created_by=None, **values) -> JudgeEndpoint:
    values = {"prompt_version": DEFAULT_PROMPT} | _clean(values)
    for field in ("name", "base_url", "model"):
        if not values.get(field):
            raise JudgeEndpointError(f"{field}: required")
    _key_binding(values.get("key_env", ""), values["base_url"])
    try:
        with transaction.atomic():
            endpoint = JudgeEndpoint.objects.create(created_by=created_by, **values)
            _audit(endpoint, {}, created_by)
            return endpoint
    except IntegrityError as exc:
        raise JudgeEndpointError(f"name: a judge named '{values['name']}' exists already") from exc


def judge_endpoint_update(*, endpoint: JudgeEndpoint, changed_by=None, **values) -> JudgeEndpoint:
    values = _clean(values)
    before = {field: getattr(endpoint, field) for field in AUDITED}
    _key_binding(values.get("key_env", endpoint.key_env), values.get("base_url", endpoint.base_url))
    for field, value in values.items():
        setattr(endpoint, field, value)
    try:
        with transaction.atomic():
            endpoint.save()
            _audit(endpoint, before, changed_by)
    except IntegrityError as exc:
        raise JudgeEndpointError(f"name: a judge named '{endpoint.name}' exists already") from exc
    return endpoint


def judge_network_backend(endpoint: JudgeEndpoint) -> PinnedBackend:
    """What a run's connections are opened through, checked again on the worker: the key may go to
    this URL (..keys), the URL passes the outbound policy, and every connection goes to the address
    its host resolves to now (outbound.PinnedBackend). Raises JudgeEndpointError naming the rule."""
    _key_binding(endpoint.key_env, endpoint.base_url)
    try:
        return pinned_backend(url=endpoint.base_url, allow_query=False, what="base_url")
    except OutboundRefused as exc:
        raise JudgeEndpointError(f"judge '{endpoint.name}': {exc}") from None


def judge_endpoint_key(endpoint: JudgeEndpoint) -> str | None:
    """The key from the worker's environment, or None when the endpoint needs none. Raises
    JudgeEndpointError naming the variable (never its value) when it cannot be read."""
    name = endpoint.key_env
    if not name:
        return None
    _key_binding(name, endpoint.base_url)
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
