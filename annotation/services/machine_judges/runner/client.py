"""Asking one pair of an OpenAI-compatible server: retries, back-off and the run's budget.

Retried: 429 and 5xx answers, timeouts and connection errors, up to `max_retries` times after the
first request, waiting the server's Retry-After when it sends one (seconds or an HTTP date, at
most RETRY_AFTER_MAX) and otherwise an exponential back-off with full jitter (a uniform wait in
[0, BACKOFF_BASE * 2^attempt], capped at BACKOFF_MAX), so that many threads turned away together do
not come back together. Not retried: an answer that carries no verdict (malformed JSON: at
temperature 0 the same question gets the same answer), and 401/403/404, which say the endpoint is
misconfigured: they stop the run (EndpointRefused).

Every HTTP request, retries included, is taken from the run's Budget before it is sent; tokens are
added from each answer's `usage` (when it gives small whole numbers: see judge_chat.usage_counts).
No request is sent once the budget is spent.

**Bounded answers.** An answer is read as a stream and never past `max_bytes` (the setting
REJUDGE_JUDGE_ANSWER_MAX_BYTES, 1 MiB by default: a verdict is a few hundred bytes, a chat answer
with logprobs a few kilobytes): one that declares or sends more is that pair's error ("answer
larger than N bytes") and the connection is dropped, so a worker holds at most CONCURRENCY_MAX
answers of max_bytes at once. Compressed answers are refused (the request asks for `identity`),
so the cap counts what is held. The endpoint's `timeout_seconds` is a deadline for the whole
request, from connecting to the answer's last byte, not a wait per read: every socket operation
of the request waits at most what is left of it (_DeadlineBackend), so a server that drips a byte
every second is cut at the deadline ("no answer within the deadline").
"""
from __future__ import annotations

import math
import random
import re
import threading
import time
from dataclasses import dataclass, field
from email.utils import parsedate_to_datetime

import httpcore
import httpx

from annotation.formats.judge_chat import Verdict, VerdictError, answer_json, parse_chat_response, usage_counts
from annotation.models.judges import JUDGE_CONCURRENCY_MAX
from annotation.services.outbound import NOT_HTTP, PinnedTransport

BACKOFF_BASE = 0.5
BACKOFF_MAX = 30.0
RETRY_AFTER_MAX = 120.0
CHAT_PATH = "/v1/chat/completions"
CONCURRENCY_MAX = JUDGE_CONCURRENCY_MAX  # declared, with its reason, beside the column it bounds


class EndpointRefused(RuntimeError):
    """The server refuses the endpoint's requests as such (bad key, unknown path or model)."""


class Budget:
    """A run's allowance of requests and tokens, shared by its threads."""

    def __init__(self, *, max_requests: int | None, max_tokens: int | None, requests: int = 0, tokens: int = 0) -> None:
        self.max_requests = max_requests
        self.max_tokens = max_tokens
        self.requests = requests
        self.tokens = tokens
        self._lock = threading.Lock()

    @property
    def spent(self) -> str | None:
        """Why no further request may be sent, or None."""
        if self.max_requests is not None and self.requests >= self.max_requests:
            return f"the budget of {self.max_requests} requests is spent"
        if self.max_tokens is not None and self.tokens >= self.max_tokens:
            return f"the budget of {self.max_tokens} tokens is spent ({self.tokens} used)"
        return None

    def take_request(self) -> bool:
        with self._lock:
            if self.spent:
                return False
            self.requests += 1
            return True

    def add_tokens(self, n: int) -> None:
        with self._lock:
            self.tokens += n


_request_deadline = threading.local()  # .at: time.monotonic() by which this thread's request must end


def _left(timeout: float | None) -> float | None:
    """A socket operation's timeout, cut to what is left of the current request's deadline."""
    deadline = getattr(_request_deadline, "at", None)
    if deadline is None:
        return timeout
    left = max(deadline - time.monotonic(), 0.001)  # 0 would make the socket non-blocking
    return left if timeout is None else min(timeout, left)


class _DeadlineStream(httpcore.NetworkStream):
    def __init__(self, inner: httpcore.NetworkStream) -> None:
        self._inner = inner

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self._inner.read(max_bytes, _left(timeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._inner.write(buffer, _left(timeout))

    def close(self) -> None:
        self._inner.close()

    def start_tls(self, ssl_context, server_hostname: str | None = None, timeout: float | None = None):
        return _DeadlineStream(self._inner.start_tls(ssl_context, server_hostname, _left(timeout)))

    def get_extra_info(self, info: str):
        return self._inner.get_extra_info(info)


class _DeadlineBackend(httpcore.NetworkBackend):
    """Wraps a network backend so that every connect, read and write of a request waits at most
    what is left of that request's deadline (httpx's own timeouts are per operation)."""

    def __init__(self, inner: httpcore.NetworkBackend | None = None) -> None:
        self._inner = inner or httpcore.SyncBackend()

    def connect_tcp(self, host, port, timeout=None, local_address=None, socket_options=None):
        return _DeadlineStream(self._inner.connect_tcp(host, port, _left(timeout), local_address, socket_options))

    def connect_unix_socket(self, path, timeout=None, socket_options=None):
        return _DeadlineStream(self._inner.connect_unix_socket(path, _left(timeout), socket_options))

    def sleep(self, seconds: float) -> None:
        self._inner.sleep(seconds)


def judge_client(*, timeout_seconds: float, concurrency: int,
                 network_backend: httpcore.NetworkBackend | None = None) -> httpx.Client:
    """The HTTP client of one run: one connection per concurrent pair, redirects not followed, each
    request within its deadline (_DeadlineBackend) over `network_backend` (the outbound policy's
    pinned backend on a run; httpcore's plain sockets when None), through the outbound module's one
    transport over a chosen backend."""
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    return httpx.Client(timeout=httpx.Timeout(timeout_seconds, connect=min(10.0, timeout_seconds)),
                        transport=PinnedTransport(backend=_DeadlineBackend(network_backend), limits=limits),
                        follow_redirects=False, trust_env=False)


class AnswerTooLarge(Exception):
    pass


def _read_capped(response: httpx.Response, max_bytes: int) -> bytes:
    """The response's body, raising AnswerTooLarge as soon as it is known to exceed max_bytes."""
    declared = response.headers.get("Content-Length", "").strip()
    if re.fullmatch(r"[0-9]{1,20}", declared) and int(declared) > max_bytes:  # ASCII digits, before int()
        raise AnswerTooLarge
    chunks, size = [], 0
    for chunk in response.iter_raw():
        size += len(chunk)
        if size > max_bytes:
            raise AnswerTooLarge
        chunks.append(chunk)
    return b"".join(chunks)


@dataclass
class CallOutcome:
    verdict: Verdict | None = None
    error: str = ""
    requests: int = 0
    tokens: int = 0
    unreachable: bool = False  # the last failure was reaching the server (refused, reset, no connection)
    budget_stop: bool = False  # never answered because the budget ran out
    statuses: list[int] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # what was ignored in an answer (usage counts)


def retry_after_seconds(value: str | None, now: float | None = None) -> float | None:
    if not value:
        return None
    value = value.strip()
    try:
        seconds = float(value)
    except ValueError:
        try:
            seconds = parsedate_to_datetime(value).timestamp() - (now if now is not None else time.time())
        except (TypeError, ValueError, IndexError):
            return None
    if not math.isfinite(seconds):  # 'nan' and 'inf' parse as floats; a NaN sleep would raise
        return None
    return min(max(seconds, 0.0), RETRY_AFTER_MAX)


def backoff_seconds(attempt: int, rng: random.Random) -> float:
    return rng.uniform(0, min(BACKOFF_MAX, BACKOFF_BASE * 2 ** attempt))


def call_pair(*, client: httpx.Client, base_url: str, headers: dict, body: dict, budget: Budget, max_retries: int,
              rng: random.Random, timeout_seconds: float, max_bytes: int, sleep=time.sleep) -> CallOutcome:
    """Sends one pair's request until it gets an answer, a non-retryable failure, or runs out of
    retries or budget. Never raises for a pair's own failure, whatever the answer holds; raises
    EndpointRefused. Each request ends within `timeout_seconds` and reads at most `max_bytes`."""
    out = CallOutcome()
    url = base_url + CHAT_PATH
    headers = headers | {"Accept-Encoding": "identity"}
    for attempt in range(max_retries + 1):
        if not budget.take_request():
            out.budget_stop = True
            out.error = out.error or budget.spent or "budget spent"
            return out
        out.requests += 1
        wait = None
        _request_deadline.at = time.monotonic() + timeout_seconds
        try:
            with client.stream("POST", url, json=body, headers=headers) as response:
                out.statuses.append(response.status_code)
                encoding = response.headers.get("Content-Encoding", "identity").strip().lower()
                if response.status_code != 200:
                    raw = b""  # a refusal's body is never read: its status says enough
                elif encoding not in ("", "identity"):
                    raw = None
                else:
                    raw = _read_capped(response, max_bytes)
        except AnswerTooLarge:
            out.error, out.unreachable = f"answer larger than {max_bytes} bytes (not read further)", False
            return out
        except httpx.InvalidURL:
            # httpx reads a redirect's Location even when it follows none, and raises this (no
            # HTTPError) for one such as `data:,x`: that pair's error, never the run's.
            out.error = "answered a redirect to a Location that is no URL (redirects are not followed)"
            return out
        except httpx.ConnectTimeout:
            out.error, out.unreachable = f"the judge endpoint {NOT_HTTP} (attempt {attempt + 1})", True
        except httpx.TimeoutException:
            # The server took the request but did not answer in time: that pair's trouble (a long
            # video, a busy GPU, a server dripping its answer), not a sign that the server is gone.
            out.error, out.unreachable = (f"no answer within the deadline of {timeout_seconds:g} s for the whole "
                                          f"request (attempt {attempt + 1})"), False
        except httpx.TransportError:
            # One message whatever failed (refused, reset, not HTTP at all): no port scanner (outbound.NOT_HTTP).
            out.error, out.unreachable = f"the judge endpoint {NOT_HTTP} (attempt {attempt + 1})", True
        else:
            out.unreachable = False
            status = response.status_code
            if status in (401, 403, 404):
                # The status only: a refusal's text may echo the key, or be what some other service says.
                raise EndpointRefused(f"{url} answered HTTP {status} (check the key variable, the URL and the model "
                                      "name)")
            if status == 429 or status >= 500:
                out.error = f"HTTP {status} (attempt {attempt + 1})"
                wait = retry_after_seconds(response.headers.get("Retry-After"))
            elif status != 200:
                out.error = f"HTTP {status}"
                return out
            elif raw is None:
                out.error = "the answer is compressed (its Content-Encoding is not identity) although 'identity' was asked for"
                return out
            else:
                _read_answer(raw, out, budget)
                return out
        finally:
            _request_deadline.at = None
        if attempt < max_retries:
            sleep(wait if wait is not None else backoff_seconds(attempt, rng))
    out.error = f"gave up after {out.requests} requests: {out.error}"
    return out


def _read_answer(raw: bytes, out: CallOutcome, budget: Budget) -> None:
    """The verdict of a 200 answer into `out`, or its error: whatever the bytes hold, one pair's fate."""
    try:
        answer = answer_json(raw)
    except VerdictError as exc:
        out.error = f"the answer is not JSON: {exc}"
        return
    usage = usage_counts(answer)
    out.notes.extend(usage.notes)
    out.tokens += usage.total
    budget.add_tokens(usage.total)
    try:
        out.verdict = parse_chat_response(answer)
        out.error = ""
    except VerdictError as exc:
        out.error = f"malformed answer: {exc}"
    except (ValueError, TypeError, ArithmeticError, RecursionError) as exc:
        # parse_chat_response checks every field it reads; this is the net under those checks, so
        # that no answer ends the run whatever shape it has.
        out.error = f"malformed answer: {type(exc).__name__}"
