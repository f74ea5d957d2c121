"""Campaign rehearsal under faults (issue 23): a crowd campaign on MSR-VTT 1K-A, over HTTP only,
against a running stack with object storage on, with a job worker killed and the web server
restarted while simulated workers judge.

    .venv/bin/python bench/rehearsal.py --local --short            # CI's version, starts its own stack
    .venv/bin/python bench/rehearsal.py --local                    # the issue's size: 100 workers
    .venv/bin/python bench/rehearsal.py --local --long             # 300 workers for 30 minutes
    .venv/bin/python bench/rehearsal.py --url http://127.0.0.1:8000 --admin-token KEY \\
        --kill-worker-cmd 'podman kill rejudge_worker_1' --restart-web-cmd 'podman restart rejudge_web_1' --short

What it does, as the people involved would:

- the admin (API token) imports MSR-VTT 1K-A (``--data``; by default the test fixture's first 30
  captions) and three synthetic runs of different quality drawn from a known simulated
  truth (bench_judging_simulation's world), builds a ``sampled`` pool (so the judging_estimates
  report has design-based intervals), adds training and gold pairs, turns the gold rule on and
  opens a Prolific study;
- simulated workers arrive through the study link (the page, following its redirects), consent,
  read the guidelines, pass training and judge from the truth: careful workers err ~2% on easy
  pairs and ~25% on hard ones (~6% overall), spammers answer at random after training; answers come
  at a human pace and go through an outbox that resends the same client id on a lost connection,
  a 5xx or a too-soon refusal, as the judging page does;
- three tricksters try the known tricks (each try and its outcome printed; a trick that works is a
  failure of the platform);
- faults, while judging: the web server is restarted, and the job worker killed while a report job
  it runs is in progress (local stack: done here; otherwise the commands given);
- after: every acknowledged label is in the admin's export, no pair over-assigned and no rater
  twice on a pair, spammers paused by the gold rule, the judging_estimates intervals cover the
  simulated truth, every export matches its checksum. Exit 1 when any check or trick fails.
"""
from __future__ import annotations

import argparse
import collections
import csv
import hashlib
import html
import io
import json
import math
import os
import random
import re
import statistics
import subprocess
import sys
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import requests

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_judging_simulation import synthetic_world  # noqa: E402

from annotation.analysis.judging.estimates import estimate_metrics  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
# The default stays inside the repository; CI passes the full MSR-VTT 1K-A (--data) when it has it.
FIXTURE = REPO / "tests" / "fixtures" / "datasets" / "msrvtt_1ka_head30.csv"
RETRIED_STATUS = {502, 503, 504}
# Careful workers: ~5% wrong overall, concentrated on the hard fifth of the pairs.
HARD_ERROR, EASY_ERROR = 0.22, 0.01
# Every pair two votes (a third on disagreement): with single votes, ~5% wrong answers (false
# positives, mostly) bias C@K upward enough that the intervals miss the simulated truth about half
# the time while covering the crowd's own verdicts (seen in the first runs).
REDUNDANCY = 1.0
# Gold often enough that a spammer meets the rule (4 gold answers) within ~16 answers; one slip in
# a careful worker's first 3 gold answers no longer pauses them (3 answers at 0.75 paused 9 of 267
# careful workers in the long run).
GOLD_RATE = 0.25
GOLD_RULE = {"min_gold_answers": 4, "min_gold_accuracy": 0.7}
MEASURES = ("C@1", "C@5", "C@10", "AP", "nDCG@10")

PROFILES = {
    # CI: a small pool, a fast pace; about 2-3 minutes of judging.
    "short": dict(workers=20, spammers=2, tricksters=3, captions=40, depth=5, sample_rate=0.5, quota=40,
                  pace=(0.5, 2.0), minutes=4.0, arrive_over=15.0, min_watch=0.4, qualities=(2.8, 2.0, 1.2)),
    "default": dict(workers=100, spammers=10, tricksters=3, captions=200, depth=10, sample_rate=0.3, quota=60,
                    pace=(2.0, 8.0), minutes=12.0, arrive_over=120.0, min_watch=2.0, qualities=(2.8, 2.0, 1.2)),
    "long": dict(workers=300, spammers=30, tricksters=3, captions=1000, depth=10, sample_rate=0.3, quota=400,
                 pace=(3.0, 12.0), minutes=30.0, arrive_over=300.0, min_watch=2.0, qualities=(2.8, 2.0, 1.2)),
}


# ---- HTTP with the pages' retry rules, and the figures ------------------------------------------

class Stats:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.latency: dict[str, list[float]] = collections.defaultdict(list)
        self.errors: collections.Counter = collections.Counter()

    def record(self, kind: str, ms: float) -> None:
        with self.lock:
            self.latency[kind].append(ms)

    def error(self, kind: str, reason: str) -> None:
        with self.lock:
            self.errors[(kind, reason)] += 1


class Http:
    """A client of the stack. Transport errors, 502/503/504 and 429 are retried, with the same body
    (so the same client id), until `retry_for` seconds have passed: what the browser outbox does
    while the server restarts. Everything else is the caller's to judge."""

    def __init__(self, base: str, stats: Stats, *, token: str | None = None, retry_for: float = 120.0) -> None:
        self.base, self.stats, self.retry_for = base, stats, retry_for
        self.session = requests.Session()
        if token:
            self.session.headers["Authorization"] = f"Token {token}"

    def call(self, kind: str, method: str, path: str, **kwargs) -> requests.Response:
        kwargs.setdefault("timeout", 60)
        kwargs.setdefault("allow_redirects", False)
        url = path if path.startswith("http") else self.base + path
        deadline = time.monotonic() + self.retry_for
        delay = 0.2
        while True:
            started = time.perf_counter()
            try:
                response = self.session.request(method, url, **kwargs)
            except requests.RequestException as exc:
                self.stats.error(kind, f"transport ({type(exc).__name__}), retried")
                response = None
            else:
                self.stats.record(kind, (time.perf_counter() - started) * 1000)
                if response.status_code not in RETRIED_STATUS and response.status_code != 429:
                    if response.status_code >= 500:
                        self.stats.error(kind, f"HTTP {response.status_code}")
                    return response
                self.stats.error(kind, f"HTTP {response.status_code}, retried")
                if response.status_code == 429:
                    delay = max(delay, float(response.headers.get("Retry-After") or 1))
            if time.monotonic() > deadline:
                if response is not None:
                    return response
                raise RuntimeError(f"{method} {path}: no answer for {self.retry_for:.0f}s")
            # Back-off between resends, as the outbox does; not a wait for a condition.
            time.sleep(delay)
            delay = min(delay * 2, 2.0)

    def json(self, kind: str, method: str, path: str, expect: int | tuple, **kwargs) -> dict:
        response = self.call(kind, method, path, **kwargs)
        expected = (expect,) if isinstance(expect, int) else expect
        if response.status_code not in expected:
            raise RuntimeError(f"{method} {path}: {response.status_code}, expected {expect}: {response.text[:800]}")
        return response.json() if response.content else {}

    def wait_job(self, job_id: int, timeout: float) -> dict:
        deadline = time.monotonic() + timeout
        while True:
            job = self.json("admin: job", "GET", f"/api/v1/jobs/{job_id}/", 200)
            if job["status"] in ("succeeded", "failed"):
                return job
            if time.monotonic() > deadline:
                raise RuntimeError(f"job {job_id} ({job['kind']}) not finished after {timeout:.0f}s: {job['status']} "
                                   f"{job.get('message')}")
            time.sleep(0.25)


def admitted(page: requests.Response, token: str) -> bool:
    """Whether the study link let the browser in: it lands on a stage page (consent, guidelines or
    the work), not on a refusal."""
    path = page.url.split("?")[0]
    return page.status_code == 200 and (path.endswith(f"/study/{token}/go/") or path.endswith(f"/study/{token}/work/"))


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


# ---- the simulated world -------------------------------------------------------------------------

@dataclass
class World:
    captions: list[str]              # pooled caption keys
    text: dict[str, str]             # caption key -> sentence
    clips: list[str]
    original: dict[str, str]
    rankings: dict[str, dict[str, list[str]]]
    truth: dict[tuple[str, str], bool]
    known: dict[str, set[str]]
    gold: list[tuple[str, str, bool]]      # caption key, clip, relevant
    training: list[tuple[str, str, bool]]
    by_text: dict[tuple[str, str], bool] = field(default_factory=dict)
    hard: set[tuple[str, str]] = field(default_factory=set)

    def answer_key(self, caption_text: str, clip: str) -> bool | None:
        return self.by_text.get((caption_text, clip))


def build_world(data: Path, n_captions: int, depth: int, qualities, seed: int) -> tuple[World, bytes]:
    raw = data.read_bytes()
    rows = list(csv.DictReader(io.StringIO(raw.decode("utf-8"))))
    text = {r["key"]: r["sentence"] for r in rows}
    original_all = {r["key"]: r["video_id"] for r in rows}
    clips = sorted({r["video_id"] for r in rows})
    # Pooled captions first; the rest give training and gold pairs, never pool pairs.
    n_captions = min(n_captions, len(rows) - 10)
    pooled = [r["key"] for r in rows[:n_captions]]
    spare = [r["key"] for r in rows[n_captions:]]
    import bench_judging_simulation as sim

    sim.DEPTH = depth
    rankings, truth, known = synthetic_world(pooled, clips, {k: original_all[k] for k in pooled}, qualities=list(qualities),
                                             extra_relevant=1.5, seed=seed)
    rng = random.Random(seed)
    known_pairs = []
    for key in spare[: min(len(spare), 12)]:
        other = rng.choice([c for c in clips if c != original_all[key]])
        known_pairs += [(key, original_all[key], True), (key, other, False)]
    training, gold = known_pairs[:4], known_pairs[4:]
    world = World(pooled, text, clips, {k: original_all[k] for k in pooled}, rankings, truth, known, gold, training)
    for (key, clip), relevant in truth.items():
        world.by_text[(text[key], clip)] = world.by_text.get((text[key], clip), False) or relevant
    for key in pooled:
        world.by_text[(text[key], original_all[key])] = True
    for key, clip, relevant in gold + training:
        world.by_text[(text[key], clip)] = relevant
    # Hard pairs: a fifth of the pooled pairs, fixed by the seed (where careful workers err).
    world.hard = {pair for pair in truth if random.Random(f"{seed}-{pair}").random() < 0.2}
    return world, raw


def trec_file(name: str, per_query: dict[str, list[str]]) -> bytes:
    lines = [f"{q} Q0 {clip} {rank} {100 - rank:.1f} {name}" for q, clips in per_query.items()
             for rank, clip in enumerate(clips, start=1)]
    return ("\n".join(lines) + "\n").encode()


def true_values(world: World) -> dict[tuple[str, str], float]:
    pairs = {pr: v for pr, v in world.truth.items() if pr[1] not in world.known.get(pr[0], ())}
    return {(e.run, e.measure): e.estimate for e in
            estimate_metrics(world.rankings, pairs, {}, known_relevant=world.known, measures=MEASURES).runs}


def crowd_values(world: World, rows: list[dict]) -> dict[tuple[str, str], float]:
    """Each measure with every pool pair judged as this crowd judges: the pool's resolved label where
    it has one (no majority: not relevant, the report's convention), else one careful worker's
    simulated answer (the error model of Campaign.decide), seeded."""
    resolved = {}
    for r in rows:
        if r["pair_state"] in ("resolved", "disagreement", "adjudicated") or r["resolved_label"]:
            resolved[(r["caption_id"], r["clip_id"])] = r["resolved_label"] == "relevant"
    pairs = {}
    for pair, relevant in world.truth.items():
        if pair[1] in world.known.get(pair[0], ()):
            continue
        if pair in resolved:
            pairs[pair] = resolved[pair]
        else:
            wrong = random.Random(f"crowd-{pair}").random() < (HARD_ERROR if pair in world.hard else EASY_ERROR)
            pairs[pair] = relevant != wrong
    return {(e.run, e.measure): e.estimate for e in
            estimate_metrics(world.rankings, pairs, {}, known_relevant=world.known, measures=MEASURES).runs}


# ---- workers ---------------------------------------------------------------------------------

@dataclass
class Ack:
    worker: str
    caption_text: str
    clip: str
    value: str
    mode: str
    gold: bool


@dataclass
class Trick:
    who: str
    name: str
    worked: bool
    detail: str


class Campaign:
    def __init__(self, args, base: str, world: World, stats: Stats, token: str, pool_id: int) -> None:
        self.args, self.base, self.world, self.stats = args, base, world, stats
        self.token, self.pool_id = token, pool_id
        self.lock = threading.Lock()
        self.acks: list[Ack] = []
        self.tricks: list[Trick] = []
        self.outcomes: collections.Counter = collections.Counter()
        self.leaked_lease: str | None = None   # a careful worker's live lease, "overheard" by a trickster
        self.arrived: list[str] = []            # worker ids that have arrived (victims for a trickster)
        self.gold_texts = {(world.text[k], c) for k, c, _ in world.gold}
        self.deadline = time.monotonic() + args.minutes * 60

    def trick(self, who: str, name: str, worked: bool, detail: str) -> None:
        with self.lock:
            self.tricks.append(Trick(who, name, worked, detail))
        print(f"  trick  {who:<10} {name:<42} {'WORKED (platform failure)' if worked else 'failed (good)'}: {detail}",
              flush=True)

    def ack(self, a: Ack) -> None:
        with self.lock:
            self.acks.append(a)

    # -- the worker's steps through the pages and the queue

    def arrive(self, http: Http, worker_id: str, session_id: str | None = None) -> requests.Response:
        """The study link, as Prolific sends the worker: the link's page (a GET makes nothing) holds
        the consent and a form with a signed ticket, and "I agree" posts it (CSRF-checked, so the
        page's cookie comes along), which makes the account and leads to the guidelines. A page
        without that form (a refusal, the resume form, the choice of a signed-in browser, or a
        browser already in) is the answer as it is."""
        params = {"PROLIFIC_PID": worker_id, "STUDY_ID": "rehearsal", "SESSION_ID": session_id or uuid.uuid4().hex}
        page = http.call("arrive", "GET", f"/study/{self.token}/", params=params, allow_redirects=True)
        ticket = re.search(r'name="ticket" value="([^"]*)"', page.text)
        agree = 'name="action" value="agree"' in page.text
        if page.status_code != 200 or not ticket or not agree:
            return page
        return http.call("enter", "POST", f"/study/{self.token}/enter/", allow_redirects=True,
                         data={"csrfmiddlewaretoken": http.session.cookies.get("csrftoken", ""),
                               "ticket": html.unescape(ticket.group(1)), "action": "agree"},
                         headers={"Referer": page.url})

    def start(self, http: Http, worker_id: str) -> bool:
        page = self.arrive(http, worker_id)
        if not admitted(page, self.token):
            self.stats.error("arrive", f"refused {page.status_code}")
            return False
        http.session.headers["X-CSRFToken"] = http.session.cookies.get("csrftoken", "")
        if not page.url.split("?")[0].endswith("/work/"):  # a worker coming back resumes at the work
            http.json("consent", "POST", f"/api/v1/study/{self.token}/consent/", 200, json={"agree": True})
            http.json("guidelines", "POST", f"/api/v1/study/{self.token}/guidelines-read/", 200, json={})
        with self.lock:
            self.arrived.append(worker_id)
        return True

    def next(self, http: Http, exclude=()) -> dict:
        return http.json("next", "POST", f"/api/v1/pools/{self.pool_id}/next/", 200, json={"exclude": list(exclude)})

    def submit(self, http: Http, lease: str, value: str, seconds: float) -> requests.Response:
        """The outbox: the same client id until the server answers something other than too soon."""
        body = {"client_id": uuid.uuid4().hex, "lease_id": lease, "value": value, "seconds": round(seconds, 2)}
        for _ in range(20):
            response = http.call("label", "POST", "/api/v1/labels/", json=body)
            if response.status_code == 409 and response.json().get("code") == "too_soon":
                time.sleep(float(response.json().get("seconds_left") or 0.5) + 0.05)
                continue
            return response
        return response

    def decide(self, rng: random.Random, kind: str, assignment: dict) -> str:
        truth = self.world.answer_key(assignment["caption"]["text"], assignment["clip"]["id"])
        if truth is None:
            truth = False  # not a pair of the simulated world (should not happen): "when in doubt, not relevant"
        if kind == "spammer" and assignment["mode"] != "training":
            return rng.choice(("relevant", "not_relevant"))
        key_pairs = [(k, assignment["clip"]["id"]) for k in self.world.captions
                     if self.world.text[k] == assignment["caption"]["text"]]
        hard = any(p in self.world.hard for p in key_pairs)
        wrong = rng.random() < (HARD_ERROR if hard else EASY_ERROR)
        return "relevant" if truth != wrong else "not_relevant"

    def judge_loop(self, http: Http, worker_id: str, kind: str, rng: random.Random, *, on_first_production=None) -> str:
        idle_tries = 0
        while time.monotonic() < self.deadline:
            body = self.next(http)
            assignment = body["assignment"]
            if assignment is None:
                reason = body["reason"]
                if reason == "no_work_left" and idle_tries < 3:
                    # Pairs others hold may come back when they answer or give up.
                    idle_tries += 1
                    time.sleep(2)
                    continue
                return reason
            idle_tries = 0
            # Only an honest worker's lease is "overheard": the tricksters judge as careful workers
            # too, and trickster 2 would otherwise try its own lease as another's.
            if kind == "careful" and worker_id.startswith("care") and assignment["mode"] == "production":
                with self.lock:
                    self.leaked_lease = assignment["lease_id"]
            if on_first_production and assignment["mode"] == "production":
                handled = on_first_production(assignment)
                on_first_production = None
                if handled:
                    continue
            think = rng.uniform(*self.args.pace)
            time.sleep(think)  # watching the clip and deciding: the human pace
            value = self.decide(rng, kind, assignment)
            response = self.submit(http, assignment["lease_id"], value, think)
            if response.status_code in (200, 201):
                gold = (assignment["caption"]["text"], assignment["clip"]["id"]) in self.gold_texts
                self.ack(Ack(worker_id, assignment["caption"]["text"], assignment["clip"]["id"], value,
                             assignment["mode"], gold))
            elif response.status_code == 403 and response.json().get("code") == "paused":
                return "paused"
            else:
                refusal = response.json() if response.headers.get("Content-Type", "").startswith("application/json") else {}
                self.stats.error("label", f"refused {response.status_code} {refusal.get('code')}: "
                                          f"{str(refusal.get('detail', response.text))[:50]}")
        return "time_up"

    def careful_or_spammer(self, index: int, kind: str) -> None:
        worker_id = f"{kind[:4]}{index:04d}{uuid.uuid4().hex[:6]}"
        http = Http(self.base, self.stats)
        rng = random.Random(f"{self.args.seed}-{worker_id}")
        try:
            if not self.start(http, worker_id):
                self.outcomes[f"{kind}: arrival refused"] += 1
                return
            outcome = self.judge_loop(http, worker_id, kind, rng)
            progress = http.json("progress", "GET", f"/api/v1/study/{self.token}/progress/", 200)
            done = " (completion code shown)" if progress.get("completion") else ""
            self.outcomes[f"{kind}: {outcome}{done}"] += 1
        except Exception as exc:  # noqa: BLE001 - one worker's crash is a finding, not the end of the run
            self.outcomes[f"{kind}: crashed ({type(exc).__name__}: {str(exc)[:120]})"] += 1

    # -- the tricksters

    def trickster(self, index: int) -> None:
        try:
            getattr(self, f"trickster_{index % 3}")()
            self.outcomes["trickster: finished"] += 1
        except Exception as exc:  # noqa: BLE001
            self.outcomes[f"trickster: crashed ({type(exc).__name__}: {str(exc)[:160]})"] += 1

    def trickster_0(self) -> None:
        """Opens the study link while signed in as another account; a huge `seconds`."""
        who = "trick0"
        # (a) signed in as an ordinary rater account (through the login form), then the study link.
        rater = Http(self.base, self.stats)
        rater.call("login", "GET", "/login/")
        csrf = rater.session.cookies.get("csrftoken", "")
        login = rater.call("login", "POST", "/login/", data={"username": self.args.rater_username,
                                                             "password": self.args.rater_password,
                                                             "csrfmiddlewaretoken": csrf},
                           headers={"Referer": self.base + "/login/"})
        page = self.arrive(rater, f"t0x{uuid.uuid4().hex[:8]}")
        me = rater.call("me", "GET", "/api/v1/me/")
        switched = admitted(page, self.token)
        self.trick(who, "study link while signed in as a rater", switched,
                   f"login {login.status_code}; link -> {page.status_code} {page.url.replace(self.base, '')}; "
                   f"now signed in as {me.json().get('username') if me.ok else me.status_code}")
        # (b) signed in as worker A of this study, the link again with another worker id.
        http = Http(self.base, self.stats)
        worker_id = f"t0{uuid.uuid4().hex[:8]}"
        if not self.start(http, worker_id):
            raise RuntimeError("trickster 0 could not arrive")
        page = self.arrive(http, f"t0y{uuid.uuid4().hex[:8]}")
        self.trick(who, "study link as worker A with worker id B", admitted(page, self.token),
                   f"link -> {page.status_code} {page.url.replace(self.base, '')}")
        # Back to its own id in its own browser for the rest: a fresh browser would be refused
        # (`resume_needed`: an id alone opens no account), which is the stolen-id trick's finding.
        if not self.start(http, worker_id):
            raise RuntimeError("trickster 0 could not come back in its own browser")
        rng = random.Random(f"{self.args.seed}-{worker_id}")

        def huge_seconds(assignment: dict) -> bool:
            time.sleep(max(self.args.min_watch, 0.1) + 0.1)
            value = self.decide(rng, "careful", assignment)
            response = self.submit(http, assignment["lease_id"], value, 1e12)
            stored = None
            if response.status_code in (200, 201):
                self.ack(Ack(worker_id, assignment["caption"]["text"], assignment["clip"]["id"], value, "production",
                             (assignment["caption"]["text"], assignment["clip"]["id"]) in self.gold_texts))
                stored = response.json()["label"]["seconds"]
            worked = stored is not None and stored > 24 * 3600
            self.trick(who, "a huge seconds value (1e12)", worked,
                       f"answer {response.status_code}; stored seconds {stored}")
            return response.status_code in (200, 201)

        self.judge_loop(http, worker_id, "careful", rng, on_first_production=huge_seconds)

    def trickster_1(self) -> None:
        """Excludes training pairs to reach production; arrives with another worker's id."""
        who = "trick1"
        http = Http(self.base, self.stats)
        worker_id = f"t1{uuid.uuid4().hex[:8]}"
        if not self.start(http, worker_id):
            raise RuntimeError("trickster 1 could not arrive")
        held, modes = [], []
        for _ in range(6):
            body = self.next(http, exclude=held[-10:])
            if body["assignment"] is None:
                modes.append(body["reason"])
                break
            held.append(body["assignment"]["lease_id"])
            modes.append(body["assignment"]["mode"])
        self.trick(who, "exclude training pairs to skip training", "production" in modes,
                   f"6 nexts excluding held leases gave {collections.Counter(modes)}")
        for lease in held:
            http.call("release", "POST", f"/api/v1/leases/{lease}/release/")
        # Another worker's id (an honest one who has already arrived) with its own session id,
        # from a fresh browser: must not open the victim's account.
        victim = self.wait_for_victim()
        thief = Http(self.base, self.stats)
        page = self.arrive(thief, victim, session_id=f"thief-{uuid.uuid4().hex[:8]}")
        progress = thief.call("progress", "GET", f"/api/v1/study/{self.token}/progress/")
        # Worked when the thief's browser now sees the victim's study progress (their account).
        worked = progress.status_code == 200
        self.trick(who, "another worker's id with own session id", worked,
                   f"link -> {page.status_code} {page.url.replace(self.base, '')}; victim's progress "
                   f"-> {progress.status_code} {progress.text[:80] if progress.status_code == 200 else ''}")
        rng = random.Random(f"{self.args.seed}-{worker_id}")
        self.judge_loop(http, worker_id, "careful", rng)

    def wait_for_victim(self) -> str:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            with self.lock:
                honest = [w for w in self.arrived if w.startswith("care")]
            if honest:
                return honest[0]
            time.sleep(0.5)
        raise RuntimeError("no careful worker arrived within 60 s")

    def trickster_2(self) -> None:
        """Cycles next/release to spot gold by order; answers without a lease, and on another's."""
        who = "trick2"
        http = Http(self.base, self.stats)
        worker_id = f"t2{uuid.uuid4().hex[:8]}"
        if not self.start(http, worker_id):
            raise RuntimeError("trickster 2 could not arrive")
        rng = random.Random(f"{self.args.seed}-{worker_id}")
        state = {}

        def attacks(assignment: dict) -> bool:
            # Answer without a lease, and with a lease that is not theirs.
            response = http.call("label", "POST", "/api/v1/labels/", json={
                "client_id": uuid.uuid4().hex, "lease_id": uuid.uuid4().hex[:22], "value": "relevant", "seconds": 3})
            self.trick(who, "answer without a lease (made-up lease id)", response.status_code in (200, 201),
                       f"answer {response.status_code} {response.text[:80]}")
            leaked, deadline = None, time.monotonic() + 60
            while leaked is None and time.monotonic() < deadline:
                with self.lock:
                    leaked = self.leaked_lease
                if leaked is None:
                    time.sleep(0.5)
            if leaked:
                response = http.call("label", "POST", "/api/v1/labels/", json={
                    "client_id": uuid.uuid4().hex, "lease_id": leaked, "value": "relevant", "seconds": 3})
                worked = response.status_code in (200, 201)
                if worked:
                    self.ack(Ack(worker_id, "?", "?", "relevant", "production", False))
                self.trick(who, "answer on another worker's lease", worked,
                           f"answer {response.status_code} {response.text[:80]}")
            # else: not tried (no careful worker's lease within 60 s), which the tricks check reports.
            # Cycle: take a pair, give it back, many times; whether a pair comes back again must
            # not tell gold from pool pairs.
            seen = collections.Counter()
            gold_items, lease = set(), assignment["lease_id"]
            items = {assignment["item_id"]: assignment}
            seen[assignment["item_id"]] += 1
            cycles = 30
            for _ in range(cycles):
                http.call("release", "POST", f"/api/v1/leases/{lease}/release/")
                body = self.next(http)
                if body["assignment"] is None:
                    break
                a = body["assignment"]
                lease = a["lease_id"]
                seen[a["item_id"]] += 1
                items[a["item_id"]] = a
            for item, a in items.items():
                if (a["caption"]["text"], a["clip"]["id"]) in self.gold_texts:
                    gold_items.add(item)
            repeated = {i for i, n in seen.items() if n > 1}
            pool_items = set(seen) - gold_items
            separates = bool(gold_items) and bool(pool_items) and (
                (gold_items <= repeated and not (pool_items & repeated))
                or (pool_items <= repeated and not (gold_items & repeated)))
            self.trick(who, f"cycle next/release x{cycles} to spot gold", separates,
                       f"{len(seen)} distinct pairs seen, {len(gold_items)} gold; repeated: "
                       f"{len(repeated & gold_items)} gold, {len(repeated & pool_items)} pool")
            state["lease"] = lease
            http.call("release", "POST", f"/api/v1/leases/{lease}/release/")
            return True

        self.judge_loop(http, worker_id, "careful", rng, on_first_production=attacks)


# ---- the admin's side ---------------------------------------------------------------------------

def setup_campaign(args, admin: Http, world: World, data_bytes: bytes, data_name: str) -> dict:
    job_timeout = 300
    t = time.monotonic()
    started = admin.json("admin: upload", "POST", "/api/v1/datasets/import/", 202,
                         headers={"Idempotency-Key": f"rehearsal-dataset-{args.run_id}"},
                         files={"file": (data_name, data_bytes)}, data={"name": f"msrvtt-1ka-{args.run_id}"})
    job = admin.wait_job(started["id"], job_timeout)
    assert job["status"] == "succeeded", job
    dataset_id = job["result"]["dataset_id"]
    print(f"dataset imported: {job['result']['captions']} captions, {job['result']['clips']} clips "
          f"({time.monotonic() - t:.1f}s)", flush=True)
    run_ids = []
    for name, per_query in world.rankings.items():
        started = admin.json("admin: upload", "POST", f"/api/v1/datasets/{dataset_id}/runs/import/", 202,
                             headers={"Idempotency-Key": f"rehearsal-run-{name}-{args.run_id}"},
                             files={"file": (f"{name}.trec", trec_file(name, per_query))}, data={"name": name})
        job = admin.wait_job(started["id"], job_timeout)
        assert job["status"] == "succeeded", job
        run_ids.append(job["result"]["run_id"])
    started = admin.json("admin: pool", "POST", "/api/v1/pools/build/", 202, json={
        "dataset": dataset_id, "name": f"rehearsal-{args.run_id}", "runs": run_ids, "depth": args.depth,
        "redundancy": REDUNDANCY, "seed": args.seed, "gold_rate": GOLD_RATE, "training_pass_mark": 0.75,
        "lease_seconds": 120, "strategy": "sampled", "sample_rate": args.sample_rate, "top_stratum_depth": 1})
    job = admin.wait_job(started["id"], job_timeout)
    assert job["status"] == "succeeded", job
    pool_id = job["result"]["pool_id"]
    items = [{"caption": k, "clip": c, "answer": "relevant" if r else "not_relevant", "role": "training",
              "explanation": "The clip shows what the caption says." if r else "Another scene."}
             for k, c, r in world.training]
    items += [{"caption": k, "clip": c, "answer": "relevant" if r else "not_relevant", "role": "gold"}
              for k, c, r in world.gold]
    admin.json("admin: pool", "POST", f"/api/v1/pools/{pool_id}/known-pairs/", (200, 201), json={"items": items})
    rule = admin.json("admin: pool", "PUT", f"/api/v1/pools/{pool_id}/quality-rule/", (200, 201), json={
        "enabled": True, **GOLD_RULE, "set_aside_labels": True, "too_fast_seconds": 0.2})
    study = admin.json("admin: pool", "PUT", f"/api/v1/pools/{pool_id}/crowd-study/", (200, 201), json={
        "platform": "prolific", "title": "Does the clip show the caption?", "completion_code": "REHEARSAL23",
        "quota_pairs": args.quota, "quota_minutes": max(1, math.ceil(args.minutes)) + 5,
        "consent_text": "A rehearsal: simulated workers only.", "training_required": True, "is_open": True})
    # An ordinary rater account (not a crowd worker), for the signed-in-as-another-account trick.
    args.rater_username, args.rater_password = f"rehearsal-rater-{args.run_id}", uuid.uuid4().hex
    admin.json("admin: raters", "POST", "/api/v1/raters/", 201,
               json={"username": args.rater_username, "password": args.rater_password})
    pool = admin.json("admin: pool", "GET", f"/api/v1/pools/{pool_id}/", 200)
    print(f"pool {pool_id}: {job['result']['pairs']} pairs, strategy sampled (rate {args.sample_rate}), "
          f"{len(world.training)} training + {len(world.gold)} gold pairs, gold rate {GOLD_RATE}, gold rule {rule}", flush=True)
    print(f"study: {study['entry_url']}", flush=True)
    return {"dataset": dataset_id, "runs": run_ids, "pool": pool_id, "token": study["token"], "pool_json": pool,
            "build": job["result"]}


def download_export(admin: Http, pool_id: int, fmt: str, timeout: float, *, job_id: int | None = None) -> tuple[dict, bytes]:
    if job_id is None:
        job_id = admin.json("admin: export", "POST", f"/api/v1/pools/{pool_id}/exports/", 202, json={"format": fmt})["id"]
    job = admin.wait_job(job_id, timeout)
    if job["status"] != "succeeded":
        raise RuntimeError(f"export {fmt} failed: {job['message']}")
    download = admin.call("admin: download", "GET", job["result"]["download_url"], allow_redirects=True)
    if download.status_code != 200:
        raise RuntimeError(f"download of export {job['result']['export_id']}: {download.status_code}")
    return job, download.content


# ---- faults -------------------------------------------------------------------------------------

def run_fault(label: str, command: str | None, local_action) -> str:
    if command:
        result = subprocess.run(command, shell=True, capture_output=True, text=True, timeout=300)
        return f"`{command}` exited {result.returncode} {result.stdout.strip()[:200]} {result.stderr.strip()[:200]}"
    if local_action is None:
        return "not run (no command given and no local stack)"
    return local_action()


def fault_kill_worker(args, admin: Http, pool_id: int, stack, report: dict) -> None:
    """Starts jobs (a heavy agreement report, then an export and a report the worker takes after it),
    waits until the first one runs, and kills the worker under it."""
    jobs = [admin.json("admin: report", "POST", f"/api/v1/pools/{pool_id}/reports/", 202,
                       json={"kind": "agreement", "params": {"n_boot": 20000, "with_mace": 1}})["id"],
            admin.json("admin: export", "POST", f"/api/v1/pools/{pool_id}/exports/", 202, json={"format": "jsonl"})["id"],
            admin.json("admin: report", "POST", f"/api/v1/pools/{pool_id}/reports/", 202,
                       json={"kind": "metrics"})["id"]]
    deadline = time.monotonic() + 120
    status = None
    while time.monotonic() < deadline:
        status = admin.json("admin: job", "GET", f"/api/v1/jobs/{jobs[0]}/", 200)["status"]
        if status != "queued":
            break
        time.sleep(0.1)
    t = time.monotonic()
    done = run_fault("kill worker", args.kill_worker_cmd, stack.kill_worker if stack else None)
    print(f"  FAULT  kill worker while job {jobs[0]} was {status}: {done}", flush=True)
    outcomes = []
    for job_id in jobs:
        job = admin.wait_job(job_id, args.job_timeout)
        outcomes.append((job_id, job["kind"], job["status"], job["attempts"]))
    report["kill_worker"] = {"job_status_at_kill": status, "jobs": outcomes, "seconds_to_all_done": time.monotonic() - t,
                             "export_job": jobs[1]}
    print(f"  FAULT  after the kill, in {time.monotonic() - t:.0f}s: "
          + ", ".join(f"job {j} {k} {s} after {a} attempt(s)" for j, k, s, a in outcomes), flush=True)


def fault_restart_web(args, base: str, stack, report: dict) -> None:
    t = time.monotonic()
    done = run_fault("restart web", args.restart_web_cmd, stack.restart_web if stack else None)
    # Until /healthz answers again, the workers' requests fail and are resent.
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            if requests.get(base + "/healthz", timeout=2).status_code == 200:
                break
        except requests.RequestException:
            pass
        time.sleep(0.2)
    report["restart_web"] = time.monotonic() - t
    print(f"  FAULT  restart web: {done}; /healthz 200 again after {time.monotonic() - t:.1f}s", flush=True)


# ---- after-checks -------------------------------------------------------------------------------

def gold_rule_breakers(acks: list[Ack], world: World) -> set[str]:
    """Workers whose acknowledged gold answers broke the pool's gold rule at some answer: at least
    GOLD_RULE's answers and a share right below its bar (the platform's `fails_gold_rule`)."""
    answer = {(world.text[k], c): "relevant" if r else "not_relevant" for k, c, r in world.gold}
    tally: dict[str, list[int]] = collections.defaultdict(lambda: [0, 0])
    broke = set()
    for a in acks:
        key = (a.caption_text, a.clip)
        if not a.gold or key not in answer or a.value not in ("relevant", "not_relevant"):
            continue
        n_right = tally[a.worker]
        n_right[0] += 1
        n_right[1] += a.value == answer[key]
        if n_right[0] >= GOLD_RULE["min_gold_answers"] and n_right[1] / n_right[0] < GOLD_RULE["min_gold_accuracy"]:
            broke.add(a.worker)
    return broke


def check_all(args, admin: Http, campaign: Campaign, setup: dict, world: World, report: dict) -> list[tuple[str, bool, str]]:
    checks = []
    pool_id = setup["pool"]
    # Exports, each downloaded through REST and checked against its recorded SHA-256.
    exports = {}
    for fmt in ("csv", "qrels", "fire_json"):
        job, body = download_export(admin, pool_id, fmt, args.job_timeout)
        exports[fmt] = (job["result"], body)
    job, body = download_export(admin, pool_id, "jsonl", args.job_timeout, job_id=report["kill_worker"]["export_job"])
    exports["jsonl (made across the worker kill)"] = (job["result"], body)
    bad = [f"{fmt}: {hashlib.sha256(b).hexdigest()[:12]} != {r['sha256'][:12]}" for fmt, (r, b) in exports.items()
           if hashlib.sha256(b).hexdigest() != r["sha256"] or len(b) != r["size"]]
    checks.append(("every export matches its checksum", not bad,
                   f"{len(exports)} exports ({', '.join(exports)})" + (f"; MISMATCH {bad}" if bad else "")))

    rows = list(csv.DictReader(io.StringIO(exports["csv"][1].decode())))
    labels = [r for r in rows if r["label_id"]]
    quality = admin.json("admin: quality", "GET", f"/api/v1/pools/{pool_id}/rater-quality/", 200)
    pseudonym = {r["crowd_worker_id"]: str(r["pseudonym"]) for r in quality["raters"] if r.get("crowd_worker_id")}
    paused = {r["crowd_worker_id"]: r["paused"] for r in quality["raters"] if r.get("crowd_worker_id")}

    # 0 acknowledged labels lost: every acknowledged answer on a pool pair is in the export.
    exported = collections.Counter((r["rater"], r["caption_text"], r["clip_id"], r["value"]) for r in labels)
    pool_acks = [a for a in campaign.acks if a.mode == "production" and not a.gold and a.caption_text != "?"]
    missing = []
    for a in pool_acks:
        key = (pseudonym.get(a.worker, "?"), a.caption_text, a.clip, a.value)
        if exported[key] > 0:
            exported[key] -= 1
        else:
            missing.append(key)
    checks.append(("0 acknowledged labels lost", not missing,
                   f"{len(pool_acks)} acknowledged answers on pool pairs, {len(labels)} labels exported, "
                   f"{len(missing)} missing" + (f": {missing[:3]}" if missing else "")))

    # 0 over-assigned: no rater twice on a pair; no pair with more counted labels than it needs
    # (one or two by redundancy, a third only after the first two disagreed).
    by_pair = collections.defaultdict(list)
    for r in labels:
        by_pair[r["pair_id"]].append(r)
    twice = [p for p, rs in by_pair.items() if len({r["rater"] for r in rs}) < len(rs)]
    over = []
    for p, rs in by_pair.items():
        counted = sorted((r for r in rs if r["counted"] == "True"), key=lambda r: (r["vote_number"] or "0").zfill(6))
        if len(counted) > 3 or (len(counted) == 3 and counted[0]["value"] == counted[1]["value"]):
            over.append((p, [r["value"] for r in counted]))
    double = sum(1 for rs in by_pair.values() if sum(r["counted"] == "True" for r in rs) >= 2)
    checks.append(("0 over-assigned pairs, no rater twice on a pair", not twice and not over,
                   f"{len(by_pair)} pairs labelled, {double} with 2+ counted labels; rater twice: {len(twice)}, "
                   f"over-assigned: {len(over)}" + (f" {over[:3]}" if over else "")))

    # The gold rule replayed on each worker's acknowledged answers, in the order they were given:
    # it must have paused exactly the workers whose gold record broke it, at the answer that did.
    # A spammer answering at random keeps 70% right through ~10 gold answers about 6% of the time,
    # so "every spammer paused" failed about one run in eight with the platform doing right.
    breakers = gold_rule_breakers(campaign.acks, world)
    crowd = set(pseudonym)
    wrongly_paused = sorted(w for w in crowd if paused.get(w) and w not in breakers)
    not_paused = sorted(w for w in crowd & breakers if not paused.get(w))
    spammers = [w for w in campaign.arrived if w.startswith("spam")]
    caught = [w for w in spammers if paused.get(w)]
    careful_paused = [w for w in crowd if w.startswith("care") and paused.get(w)]
    checks.append(("the gold rule paused exactly the workers whose gold answers broke it",
                   bool(spammers) and not wrongly_paused and not not_paused,
                   f"{len(breakers)} broke it, all paused: {not not_paused}; paused without breaking it: "
                   f"{len(wrongly_paused)}; spammers caught {len(caught)} of {len(spammers)} (a spammer who "
                   f"guessed 70% of its gold right is not a failure); careful workers paused: {len(careful_paused)}"
                   + (f"; NOT PAUSED {not_paused[:3]}" if not_paused else "")
                   + (f"; WRONGLY PAUSED {wrongly_paused[:3]}" if wrongly_paused else "")))

    # The judging estimates' intervals against the simulated truth.
    job_id = admin.json("admin: report", "POST", f"/api/v1/pools/{pool_id}/reports/", 202,
                        json={"kind": "judging_estimates"})["id"]
    job = admin.wait_job(job_id, args.job_timeout)
    est = admin.json("admin: report", "GET", job["result"]["url"], 200)["result"]
    truth = true_values(world)
    crowd = crowd_values(world, rows)
    covered, covered_crowd = [], []
    print("\njudging_estimates (report %s): %s" % (job["result"]["report_id"], est["note"]))
    for e in est["estimates"]:
        value = truth[(e["run"], e["measure"])]
        ok = e["ci_low"] - 1e-9 <= value <= e["ci_high"] + 1e-9
        covered.append((e["run"], e["measure"], ok))
        verdicts = crowd[(e["run"], e["measure"])]
        ok_crowd = e["ci_low"] - 1e-9 <= verdicts <= e["ci_high"] + 1e-9
        covered_crowd.append(ok_crowd)
        print(f"  {e['run']:<12} {e['measure']:<8} estimate {e['estimate']:.3f} [{e['ci_low']:.3f}, {e['ci_high']:.3f}]"
              f"  truth {value:.3f} {'covered' if ok else 'MISSED '}  | crowd verdicts {verdicts:.3f} "
              f"{'covered' if ok_crowd else 'MISSED'}")
    print(f"  (crowd verdicts: the measure had every pool pair been judged by this crowd: its resolved labels where "
          f"judged, a careful worker's simulated answer elsewhere; the design-based intervals are for that value, "
          f"the gap to the truth is label noise: {sum(covered_crowd)} of {len(covered_crowd)} cover it)")
    n, k = len(covered), sum(ok for *_, ok in covered)
    c10 = [ok for run, m, ok in covered if m == "C@10"]
    # A bar with a known false-alarm rate: if each 95% interval covered independently, fewer than
    # `bar` of n would happen with probability < 1%; intervals of one pool share its sample, so
    # this is a rough bar, and label noise (majority of noisy votes) biases estimates a little.
    from math import comb

    bar = next(b for b in range(n + 1) if sum(comb(n, j) * 0.95 ** j * 0.05 ** (n - j) for j in range(b)) >= 0.01) - 1
    bar = max(bar, 1)
    # The gate is the value the design-based intervals are for: the measure had this crowd judged
    # every pooled pair. Against the simulated truth they also carry the crowd's label noise (a
    # majority of noisy votes is wrong on some hard pairs), which no sampling interval can cover:
    # that figure is printed, and fails the run only with --strict-truth.
    k_crowd = sum(covered_crowd)
    truth_ok = k >= bar and sum(c10) >= len(c10) - 1
    checks.append(("judging estimates' intervals cover the crowd's full-pool value", k_crowd >= bar,
                   f"{k_crowd} of {n} intervals (3 runs x {len(MEASURES)} measures) cover it; bar {bar} of {n} "
                   f"(P(fewer) < 1% for independent 95% intervals)"))
    print(f"  against the simulated truth: {k} of {n} cover (bar {bar}); C@10 {sum(c10)} of {len(c10)} runs: "
          f"{'met' if truth_ok else 'NOT met'}")
    if args.strict_truth:
        checks.append(("judging estimates' intervals cover the simulated truth", truth_ok,
                       f"{k} of {n} intervals cover; bar {bar} of {n}; C@10: {sum(c10)} of {len(c10)} runs "
                       f"(bar: all but one)"))
    tricks_worked = [t for t in campaign.tricks if t.worked]
    tried = {t.name for t in campaign.tricks}
    expected = 8
    checks.append(("every trick failed", not tricks_worked and len(tried) >= expected,
                   f"{len(campaign.tricks)} tries of {len(tried)} tricks, {len(tricks_worked)} worked"
                   + (f": {[t.name for t in tricks_worked]}" if tricks_worked else "")
                   + ("" if len(tried) >= expected else f"; only {len(tried)} of {expected} tricks were tried")))
    return checks


# ---- main ---------------------------------------------------------------------------------------

def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    size = parser.add_mutually_exclusive_group()
    size.add_argument("--short", action="store_true", help="CI's version: 20 workers, a small pool, a fast pace")
    size.add_argument("--long", action="store_true", help="300 workers for 30 minutes, all of 1K-A")
    parser.add_argument("--local", action="store_true", help="start a local stack (gunicorn, Celery worker, upkeep worker, "
                        "beat) from .venv against PostgreSQL, Redis and moto, and stop it at the end")
    parser.add_argument("--url", "--base-url", dest="url", help="a running stack (without --local)")
    parser.add_argument("--port", type=int, default=None, help="--local: gunicorn's port (default: a free one)")
    parser.add_argument("--admin-token-cmd", help="shell command that prints an admin's API token (e.g. creates the "
                        "first admin in the web container and runs drf_create_token), instead of --admin-token")
    parser.add_argument("--admin-token", default=os.environ.get("REJUDGE_ADMIN_TOKEN"),
                        help="an admin's API token on --url (default $REJUDGE_ADMIN_TOKEN)")
    parser.add_argument("--kill-worker-cmd", help="shell command that kills the job worker (run while a job runs)")
    parser.add_argument("--restart-web-cmd", help="shell command that restarts the web server")
    parser.add_argument("--data", type=Path, help="MSR-VTT 1K-A CSV, e.g. the shared datasets' msrvtt/msrvtt_1ka_test.csv "
                             "(default: the repository's 30-caption excerpt)")
    parser.add_argument("--seed", type=int, default=23)
    parser.add_argument("--workers", type=int)
    parser.add_argument("--minutes", type=float, help="judging time limit")
    parser.add_argument("--job-timeout", type=float, default=300)
    parser.add_argument("--keep", action="store_true", help="keep the local stack's database and bucket")
    parser.add_argument("--strict-truth", action="store_true",
                        help="also fail when the estimates' intervals miss the simulated truth (they carry the crowd's "
                             "label noise, which sampling intervals do not cover; printed either way)")
    args = parser.parse_args()
    profile = dict(PROFILES["short" if args.short else "long" if args.long else "default"])
    if args.workers:
        profile["workers"] = args.workers
    if args.minutes:
        profile["minutes"] = args.minutes
    for key, value in profile.items():
        setattr(args, key, value)
    args.run_id = uuid.uuid4().hex[:8]
    if not args.local and args.url and not args.admin_token and args.admin_token_cmd:
        # The one step outside HTTP: the first admin, made by the operator's own tool.
        printed = subprocess.run(args.admin_token_cmd, shell=True, capture_output=True, text=True, timeout=300)
        found = re.findall(r"\b[0-9a-f]{40}\b", printed.stdout)
        if not found:
            parser.error(f"--admin-token-cmd printed no 40-hex token (exit {printed.returncode}): "
                         f"{printed.stdout[-300:]} {printed.stderr[-300:]}")
        args.admin_token = found[-1]
    if not args.local and not (args.url and args.admin_token):
        parser.error("give --local, or --url with --admin-token (or --admin-token-cmd)")
    data = args.data or FIXTURE
    wall = time.monotonic()
    print(f"rehearsal {'short' if args.short else 'long' if args.long else 'default'}: {args.workers} workers "
          f"({args.spammers} spammers, {args.tricksters} tricksters), {args.captions} captions pooled at depth "
          f"{args.depth}, quota {args.quota}, pace {args.pace[0]}-{args.pace[1]} s, data {data}")
    print(f"load: {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} {os.getloadavg()[2]:.2f} on {os.cpu_count()} cores")

    stack = None
    if args.local:
        from _stack import THROTTLES, LocalStack

        stack = LocalStack("rehearsal", keep=args.keep, port=args.port or 0,
                           extra_env={"REJUDGE_MIN_WATCH_SECONDS": str(args.min_watch)})
        stack.prepare()
        stack.migrate()
        token = stack.admin_token()
        stack.start()
        base = stack.url
        print(f"local stack at {base}: database {stack.database}, Redis {stack.env()['REDIS_URL']} queue {stack.queue}, "
              f"bucket {stack.bucket} on {stack.env()['AWS_S3_ENDPOINT_URL']}, logs in {stack.root}")
        print("throttles set high for one address playing the whole crowd: "
              + ", ".join(f"{k}={v}" for k, v in THROTTLES.items()))
    else:
        base, token = args.url.rstrip("/"), args.admin_token
        print(f"stack at {base}: it must run with REJUDGE_THROTTLE_CROWD_ARRIVALS, REJUDGE_THROTTLE_ANON and "
              f"REJUDGE_THROTTLE_USER at least {args.workers * 10}/min (one address plays the whole crowd)")
    stats = Stats()
    admin = Http(base, stats, token=token)
    status = 1
    try:
        world, raw = build_world(data, args.captions, args.depth, args.qualities, args.seed)
        setup = setup_campaign(args, admin, world, raw, data.name)
        campaign = Campaign(args, base, world, stats, setup["token"], setup["pool"])
        roles = (["trickster"] * args.tricksters + ["spammer"] * args.spammers
                 + ["careful"] * (args.workers - args.tricksters - args.spammers))
        random.Random(args.seed).shuffle(roles)
        threads = []
        t_judge = time.monotonic()
        counts = collections.Counter()
        for i, role in enumerate(roles):
            target = campaign.trickster if role == "trickster" else campaign.careful_or_spammer
            index = counts[role]
            counts[role] += 1
            thread = threading.Thread(target=target, args=(index,) if role == "trickster" else (index, role), daemon=True)
            threads.append((thread, t_judge + args.arrive_over * i / max(1, len(roles))))
        fault_report: dict = {}
        fault_thread, fault_errors = None, []

        def run_one_fault(name: str) -> None:
            try:
                if name == "restart_web":
                    fault_restart_web(args, base, stack, fault_report)
                else:
                    fault_kill_worker(args, admin, setup["pool"], stack, fault_report)
            except Exception as exc:  # noqa: BLE001 - raised again in the main thread
                fault_errors.append(exc)
        faults = [("restart_web", 0.3), ("kill_worker", 0.55)]
        expected_labels = setup["build"]["pairs"] * args.sample_rate * 1.2
        started = 0
        print(f"\njudging: {len(roles)} workers arrive over {args.arrive_over:.0f}s", flush=True)
        while True:
            now = time.monotonic()
            while started < len(threads) and threads[started][1] <= now:
                threads[started][0].start()
                started += 1
            with campaign.lock:
                acked = sum(1 for a in campaign.acks if a.mode == "production")
            busy = fault_thread is not None and fault_thread.is_alive()
            # A fault's turn comes at its share of the expected labels, or of the time limit on a
            # stack too slow to get there: either way while the crowd is judging.
            due = faults and (acked >= faults[0][1] * expected_labels
                              or now - t_judge >= faults[0][1] * args.minutes * 60)
            if due and not busy:
                # In a thread of its own: the crowd keeps arriving and judging through the fault.
                fault_thread = threading.Thread(target=run_one_fault, args=(faults.pop(0)[0],), daemon=True)
                fault_thread.start()
            if started == len(threads) and not any(t.is_alive() for t, _ in threads):
                break
            time.sleep(0.2)
        judging_seconds = time.monotonic() - t_judge
        if fault_thread is not None:
            fault_thread.join()
        # A campaign that finished before a fault's turn still gets the fault, on a finished pool.
        for name, _ in faults:
            print(f"  (the crowd finished before fault {name}'s turn: run on the finished pool)")
            run_one_fault(name)
        if fault_errors:
            raise fault_errors[0]
        acked = [a for a in campaign.acks]
        print(f"\njudging over in {judging_seconds:.0f}s: {len(acked)} answers acknowledged "
              f"({len(acked) / judging_seconds:.2f} labels/s); workers: {dict(campaign.outcomes)}", flush=True)
        checks = check_all(args, admin, campaign, setup, world, fault_report)
        print("\nrequests (ms):")
        for kind in sorted(stats.latency):
            values = stats.latency[kind]
            print(f"  {kind:<18} n {len(values):>6}  p50 {statistics.median(values):8.1f}  p95 {percentile(values, 0.95):8.1f}")
        print("errors by kind:" + ("" if stats.errors else " none"))
        for (kind, reason), n in sorted(stats.errors.items()):
            print(f"  {kind:<18} {reason:<45} {n}")
        print("\ntricks:")
        by_trick = collections.Counter((t.name, t.worked) for t in campaign.tricks)
        for (name, worked), n in sorted(by_trick.items()):
            print(f"  {name:<45} tried {n}: {'WORKED - a platform failure' if worked else 'failed'}")
        print("\nafter-checks:")
        for name, ok, detail in checks:
            print(f"  [{'PASS' if ok else 'FAIL'}] {name}: {detail}")
        status = 0 if all(ok for _, ok, _ in checks) else 1
    except Exception as exc:  # noqa: BLE001 - say what broke, with the stack's logs, and fail
        import traceback

        traceback.print_exc()
        print(f"\nREHEARSAL ABORTED: {type(exc).__name__}: {exc}")
        if stack:
            for name in ("web", "worker", "upkeep"):
                print(f"--- {name} log (tail)\n{stack.log(name, 2000)}")
    finally:
        print(f"\nwall {time.monotonic() - wall:.0f}s; load {' '.join(f'{x:.2f}' for x in os.getloadavg())}; "
              f"exit {status}")
        if stack:
            stack.stop()
    return status


if __name__ == "__main__":
    sys.exit(main())
