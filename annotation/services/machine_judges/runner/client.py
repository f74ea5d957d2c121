"""Asking one pair of an OpenAI-compatible server: retries, back-off and the run's budget.

Retried: 429 and 5xx answers, timeouts and connection errors, up to `max_retries` times after the
first request, waiting the server's Retry-After when it sends one (seconds or an HTTP date, at
most RETRY_AFTER_MAX) and otherwise an exponential back-off with full jitter (a uniform wait in
[0, BACKOFF_BASE * 2^attempt], capped at BACKOFF_MAX), so that many threads turned away together do
not come back together. Not retried: an answer that carries no verdict (malformed JSON: at
temperature 0 the same question gets the same answer), and 401/403/404, which say the endpoint is
misconfigured: they stop the run (EndpointRefused).

Every HTTP request, retries included, is taken from the run's Budget before it is sent; tokens are
added from each answer's `usage`. No request is sent once the budget is spent.
"""
from __future__ import annotations

import json
import random
import threading
import time
from dataclasses import dataclass, field
from email.utils import parsedate_to_datetime

import httpx

from annotation.formats.judge_chat import Verdict, VerdictError, parse_chat_response, usage_tokens

BACKOFF_BASE = 0.5
BACKOFF_MAX = 30.0
RETRY_AFTER_MAX = 120.0
CHAT_PATH = "/v1/chat/completions"


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


@dataclass
class CallOutcome:
    verdict: Verdict | None = None
    error: str = ""
    requests: int = 0
    tokens: int = 0
    unreachable: bool = False  # the last failure was reaching the server (refused, reset, no connection)
    budget_stop: bool = False  # never answered because the budget ran out
    statuses: list[int] = field(default_factory=list)


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
    return min(max(seconds, 0.0), RETRY_AFTER_MAX)


def backoff_seconds(attempt: int, rng: random.Random) -> float:
    return rng.uniform(0, min(BACKOFF_MAX, BACKOFF_BASE * 2 ** attempt))


def call_pair(*, client: httpx.Client, base_url: str, headers: dict, body: dict, budget: Budget, max_retries: int,
              rng: random.Random, sleep=time.sleep) -> CallOutcome:
    """Sends one pair's request until it gets an answer, a non-retryable failure, or runs out of
    retries or budget. Never raises for a pair's own failure; raises EndpointRefused."""
    out = CallOutcome()
    url = base_url + CHAT_PATH
    for attempt in range(max_retries + 1):
        if not budget.take_request():
            out.budget_stop = True
            out.error = out.error or budget.spent or "budget spent"
            return out
        out.requests += 1
        wait = None
        try:
            response = client.post(url, json=body, headers=headers)
        except httpx.ConnectTimeout:
            out.error, out.unreachable = f"no connection within the timeout (attempt {attempt + 1})", True
        except httpx.TimeoutException:
            # The server took the request but did not answer in time: that pair's trouble (a long
            # video, a busy GPU), not a sign that the server is gone.
            out.error, out.unreachable = f"no answer within the timeout (attempt {attempt + 1})", False
        except httpx.TransportError as exc:
            out.error, out.unreachable = f"{type(exc).__name__} (attempt {attempt + 1})", True
        else:
            out.statuses.append(response.status_code)
            out.unreachable = False
            if response.status_code in (401, 403, 404):
                raise EndpointRefused(f"{url} answered HTTP {response.status_code}: "
                                      f"{response.text[:200]!r} (check the key variable, the URL and the model name)")
            if response.status_code == 429 or response.status_code >= 500:
                out.error = f"HTTP {response.status_code} (attempt {attempt + 1})"
                wait = retry_after_seconds(response.headers.get("Retry-After"))
            elif response.status_code != 200:
                out.error = f"HTTP {response.status_code}: {response.text[:200]!r}"
                return out
            else:
                try:
                    answer = response.json()
                except (json.JSONDecodeError, UnicodeDecodeError):
                    out.error = f"the answer is not JSON: {response.text[:200]!r}"
                    return out
                spent = usage_tokens(answer)
                out.tokens += spent
                budget.add_tokens(spent)
                try:
                    out.verdict = parse_chat_response(answer)
                    out.error = ""
                except VerdictError as exc:
                    out.error = f"malformed answer: {exc}"
                return out
        if attempt < max_retries:
            sleep(wait if wait is not None else backoff_seconds(attempt, rng))
    out.error = f"gave up after {out.requests} requests: {out.error}"
    return out
