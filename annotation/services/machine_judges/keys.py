"""Judge keys: the hosts each key may be sent to, and masking every known key out of text.

A judge's `key_env` names a variable REJUDGE_JUDGE_KEY_<NAME> of the worker holding the key (or
whose _FILE twin names a file holding it: runner/endpoints.py reads it). The operator declares
where that key may go in the companion variable REJUDGE_JUDGE_KEY_<NAME>_HOSTS, a comma-separated
list of hosts:

    REJUDGE_JUDGE_KEY_OPENAI_HOSTS=api.openai.com                  https, port 443 only
    REJUDGE_JUDGE_KEY_VLLM_HOSTS=vllm.internal:8443,http://vllm:8000

An entry `host` or `host:port` admits https to that host and port (443 when none is written); only
an entry written `http://host[:port]` admits plain http (port 80 when none is written), so a key
never travels in clear unless the operator wrote so. Hosts are compared as names, case-insensitive
and exactly (no wildcards); where the name resolves to is the outbound policy's business
(annotation/services/outbound.py). A key whose _HOSTS is unset or empty goes nowhere: registering
or changing a judge to use it is refused, and so is running one (checked again on the worker).

The variable is read from the process's environment, as the key is: set it on the web service
(registration is checked there) and on the workers (runs are checked there). It is no secret.

`mask_keys` replaces every known key value (every REJUDGE_JUDGE_KEY_* variable's, every _FILE
twin's content) in a text with `[key masked]`: applied to whatever text from a judge's answer is
copied into a job's message, a run's error fields or a log line.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

KEY_PREFIX = "REJUDGE_JUDGE_KEY_"
KEY_ENV = re.compile(r"^REJUDGE_JUDGE_KEY_[A-Z0-9_]{1,60}$")
COMPANIONS = ("_FILE", "_HOSTS")
MASK = "[key masked]"
MIN_MASKED_LENGTH = 4  # shorter values would mask ordinary words; no real key is that short


class KeyBindingRefused(ValueError):
    """A key used where its operator did not allow it; the message names the rule."""


@dataclass(frozen=True)
class KeyHost:
    host: str
    port: int
    scheme: str  # "https", or "http" only when the entry said so

    def __str__(self) -> str:
        return f"{self.scheme}://{self.host}:{self.port}"


def hosts_variable(key_env: str) -> str:
    return f"{key_env}_HOSTS"


def key_hosts(key_env: str, environ=None) -> list[KeyHost]:
    """The hosts the operator declared for `key_env`; raises KeyBindingRefused for a bad entry."""
    environ = os.environ if environ is None else environ
    name = hosts_variable(key_env)
    hosts = []
    for entry in (environ.get(name) or "").split(","):
        entry = entry.strip()
        if not entry:
            continue
        scheme = "https"
        if "://" in entry:
            scheme, entry = entry.split("://", 1)
            scheme = scheme.lower()
            if scheme not in ("http", "https"):
                raise KeyBindingRefused(f"{name}: {scheme}:// is neither http:// nor https://")
        parts = urlsplit(f"//{entry}")
        try:
            port = parts.port
        except ValueError:
            port = -1
        if not parts.hostname or port == -1 or parts.path or parts.username or port == 0:
            raise KeyBindingRefused(f"{name}: {entry!r} is not host or host:port")
        hosts.append(KeyHost(parts.hostname.lower(), port or (443 if scheme == "https" else 80), scheme))
    return hosts


def key_binding_check(key_env: str, base_url: str, environ=None) -> None:
    """Refuses sending the key named `key_env` to `base_url` unless the operator declared that
    host, port and scheme in REJUDGE_JUDGE_KEY_<NAME>_HOSTS (see the module docstring)."""
    if not key_env:
        return
    parts = urlsplit(base_url)
    scheme = (parts.scheme or "").lower()
    try:
        port = parts.port or (443 if scheme == "https" else 80)
    except ValueError:
        raise KeyBindingRefused("base_url: the port must be a number from 1 to 65535") from None
    host = (parts.hostname or "").lower()
    hosts = key_hosts(key_env, environ)
    name = hosts_variable(key_env)
    if not hosts:
        raise KeyBindingRefused(f"key_env: the operator has declared no host for {key_env} ({name} is unset or empty "
                                "in this process), so its key may be sent nowhere")
    if not any(h.host == host and h.port == port for h in hosts):
        raise KeyBindingRefused(f"key_env: {key_env} may only be sent to the hosts {name} declares; "
                                f"{host}:{port} is not among them")
    if scheme == "http" and not any(h.host == host and h.port == port and h.scheme == "http" for h in hosts):
        raise KeyBindingRefused(f"key_env: {key_env} is never sent over plain http unless {name} lists "
                                f"http://{host}:{port}; use https")


def known_key_values(environ=None) -> set[str]:
    """Every key the process knows: the values of the REJUDGE_JUDGE_KEY_* variables and the
    contents of the files their _FILE twins name."""
    environ = os.environ if environ is None else environ
    values = set()
    for name, value in environ.items():
        if not name.startswith(KEY_PREFIX) or name.endswith("_HOSTS"):
            continue
        if name.endswith("_FILE"):
            try:
                value = Path(value).read_text(errors="replace") if value.strip() else ""
            except OSError:
                continue
        value = value.strip()
        if len(value) >= MIN_MASKED_LENGTH:
            values.add(value)
    return values


def mask_keys(text: str, *, also: tuple[str | None, ...] = (), environ=None) -> str:
    """`text` with every known key value (and those in `also`) replaced by MASK, longest first."""
    if not text:
        return text
    secrets = known_key_values(environ) | {v.strip() for v in also if v and len(v.strip()) >= MIN_MASKED_LENGTH}
    for secret in sorted(secrets, key=len, reverse=True):
        text = text.replace(secret, MASK)
    return text
