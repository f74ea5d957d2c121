"""docs/campaign.md works as written (issue 39: its example built a pool from a run it never
imported, set a gold rate with no way to attach gold pairs, and stopped before any release).

Every fenced shell block of the guide is either a ```console block, which this test runs as written
in a folder that holds what the guide starts from (the split file, the videos, two models' similarity
matrices), or a ```bash block with the reason it is not run on the line above it
(`<!-- not run by the guide's test: REASON -->`): Docker, a TLS certificate, the network, the real
server's address. The folder holds the first 60 rows of the real MSR-VTT 1K-A split file
(tests/fixtures/msrvtt_1ka_excerpt.csv), a tiny video for each (four with their index at the end,
for prepare_media to fix), and random matrices. The commands run in their own processes against the
test database; the pages' parts (raters judging, an admin's decision) are played through the same
services the pages call; the client downloads the release from a live server."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parent.parent
GUIDE = REPO / "docs" / "campaign.md"
SHELL_LANGUAGES = {"console", "bash", "sh", "shell"}
NOT_RUN = re.compile(r"<!-- not run by the guide's test: (?P<reason>[^>]*?\S[^>]*?) -->")
FENCE = re.compile(r"^```(?P<lang>[\w+-]*)\n(?P<body>.*?)^```$", re.S | re.M)
# The walk-through's names, as the guide gives them.
POOL, DATASET, RELEASE = "round-1", "msrvtt-1ka", "msrvtt-1ka-rejudged"
RATERS = ("amira", "bruno", "chen", "dana")
INDEX_AT_END = 4  # the first few videos are written without faststart: prepare_media fixes them


@dataclass
class Block:
    lang: str
    body: str
    line: int
    not_run_reason: str | None


def shell_blocks(text: str) -> list[Block]:
    """The fenced shell blocks, in order, with the reason on the line before a block not run."""
    blocks = []
    for match in FENCE.finditer(text):
        if match.group("lang") not in SHELL_LANGUAGES:
            continue
        before = text[:match.start()].rstrip("\n").rsplit("\n", 1)[-1]
        reason = NOT_RUN.fullmatch(before.strip())
        blocks.append(Block(match.group("lang"), match.group("body"), text.count("\n", 0, match.start()) + 1,
                            reason.group("reason") if reason else None))
    return blocks


def block_problems(text: str) -> list[str]:
    problems = []
    for block in shell_blocks(text):
        if block.lang == "console" and block.not_run_reason:
            problems.append(f"line {block.line}: a console block is run; a reason not to run it contradicts that")
        if block.lang != "console" and not block.not_run_reason:
            problems.append(f"line {block.line}: a {block.lang or 'plain'} block is neither run (```console) nor says "
                            "why not (<!-- not run by the guide's test: REASON --> on the line above)")
    return problems


def test_every_shell_block_of_the_guide_is_run_or_says_why_not():
    text = GUIDE.read_text()
    assert block_problems(text) == []
    blocks = shell_blocks(text)
    assert sum(b.lang == "console" for b in blocks) >= 9, "the guide's commands are console blocks, run below"
    # What the guide promises its readers, each in a block the test runs.
    run = "\n".join(b.body for b in blocks if b.lang == "console")
    for command in ("import_dataset", "prepare_media", "check_media", "import_run", "build_pool", "--known-pairs",
                    "rater import", "report", "release create", "rejudge-client download"):
        assert command in run, f"no console block runs {command}"


def test_the_checker_finds_an_unmarked_block_and_a_marked_console_block():
    text = ("intro\n\n```console\necho run\n```\n\n```bash\ndocker compose up\n```\n\n"
            "<!-- not run by the guide's test: needs Docker -->\n```bash\ndocker ps\n```\n\n"
            "<!-- not run by the guide's test: why -->\n```console\necho x\n```\n\n```python\nprint(1)\n```\n")
    assert [(b.lang, b.not_run_reason) for b in shell_blocks(text)] == [
        ("console", None), ("bash", None), ("bash", "needs Docker"), ("console", "why")]
    assert block_problems(text) == [
        "line 7: a bash block is neither run (```console) nor says why not (<!-- not run by the guide's test: "
        "REASON --> on the line above)",
        "line 17: a console block is run; a reason not to run it contradicts that"]


# --- the walk-through, run --------------------------------------------------------------------


def _walkthrough_folder(folder: Path, fixtures_dir: Path) -> list[dict]:
    """What the guide starts from: the split file, MSRVTT/videos/all/<video_id>.mp4 and each model's
    similarity matrix (row i: the caption of line i; column j: the video of line j)."""
    from tests.media_files import make_video

    import csv

    shutil.copy(fixtures_dir / "msrvtt_1ka_excerpt.csv", folder / "msrvtt_1ka_test.csv")
    with open(folder / "msrvtt_1ka_test.csv", newline="") as split:
        rows = list(csv.DictReader(split))
    videos = folder / "MSRVTT" / "videos" / "all"
    for i, row in enumerate(rows):
        make_video(videos / row["video_id"], "mp4_index_at_end" if i < INDEX_AT_END else "mp4")
    rng = np.random.default_rng(39)
    n = len(rows)
    # Models that mostly rank each caption's own video high, as real ones do.
    np.save(folder / "clip4clip_sims.npy", (rng.random((n, n)) + 0.8 * np.eye(n)).astype(np.float32))
    np.save(folder / "xclip_sims.npy", (rng.random((n, n)) + 0.5 * np.eye(n)).astype(np.float32))
    for name in (".venv", "manage.py", "clients"):
        (folder / name).symlink_to(REPO / name)
    return rows


def _environment(settings, live_server) -> dict:
    from django.db import connection

    from annotation.services.accounts.users import api_token_for
    from django.contrib.auth import get_user_model

    db = connection.settings_dict
    auth = db["USER"] + (f":{db['PASSWORD']}" if db["PASSWORD"] else "")
    env = dict(os.environ)
    env.update({
        "DEBUG": "1",
        "DATABASE_URL": f"postgres://{auth}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}",
        "PATH": f"{REPO / '.venv' / 'bin'}{os.pathsep}{env.get('PATH', '')}",
        "PYTHONPATH": str(REPO),
        "REJUDGE_URL": live_server.url,
    })
    # The storage folders this test's live server reads (tests/conftest.py _isolated_files).
    for name in ("MEDIA_ROOT", "UPLOAD_ROOT", "EXPORT_ROOT", "JUDGMENTS_ROOT", "RUNS_ROOT"):
        env[name] = str(getattr(settings, name))
    researcher = get_user_model().objects.filter(username="ana").first()
    if researcher is not None:  # the token `researcher add` printed, as the reader exports it
        env["REJUDGE_TOKEN"] = api_token_for(user=researcher)
    return env


def _judge_the_pool() -> None:
    """Sections 6, 8 and 9 on the pages: the raters get the pool and judge every pair (what the clip
    shows: its caption's own video is relevant, any other not; known pairs as known), one rater
    escalates a pair as ambiguous, and an admin decides it."""
    from django.contrib.auth import get_user_model

    from annotation.models import Pool, PooledPair
    from annotation.services.accounts.raters import memberships_grant
    from annotation.services.queue.labels import label_submit, pair_adjudicate
    from annotation.services.queue.leases import lease_next
    from tests.factories import make_user

    pool = Pool.objects.get(name=POOL, dataset__name=DATASET)
    raters = list(get_user_model().objects.filter(username__in=RATERS).order_by("username"))
    assert [r.username for r in raters] == sorted(RATERS), "the guide's raters were not created"
    memberships_grant(pool=pool, users=raters)
    escalated = None
    step = 0
    while True:
        answered = 0
        for rater in raters:
            lease = lease_next(pool=pool, rater=rater).lease
            if lease is None:
                continue
            pair = PooledPair.objects.select_related("caption", "clip").get(pk=lease.pair_id)
            if pair.role != PooledPair.Role.POOL:
                value, comment = pair.known_answer, ""
            elif escalated is None:
                value, comment, escalated = "ambiguous", "is this the same person?", pair.pk
            else:
                relevant = pair.caption.original_clip_id == pair.clip_id
                value, comment = ("relevant" if relevant else "not_relevant"), ""
            step += 1
            label_submit(rater=rater, client_id=f"guide-{step}", lease=lease.token, seconds=20, value=value,
                         comment=comment)
            answered += 1
        if not answered:
            break
    assert escalated is not None
    pair_adjudicate(pair_id=escalated, admin=make_user("admin"), label="not_relevant", note="another person")
    left = PooledPair.objects.filter(pool=pool, role=PooledPair.Role.POOL).exclude(state=PooledPair.State.RESOLVED)
    assert not left.exists(), f"{left.count()} pairs were left unresolved"


@pytest.mark.django_db(transaction=True)
def test_every_command_of_the_guide_runs_on_the_msrvtt_excerpt(require_postgres, live_server, settings, tmp_path,
                                                                 fixtures_dir):
    from annotation.models import Clip, PooledPair, Pool, Release

    folder = tmp_path / "campaign"
    folder.mkdir()
    rows = _walkthrough_folder(folder, fixtures_dir)
    judged = False
    outputs = []
    for block in shell_blocks(GUIDE.read_text()):
        if block.lang != "console":
            continue
        if not judged and "manage.py report" in block.body:
            started = time.monotonic()
            _judge_the_pool()
            print(f"judging played in {time.monotonic() - started:.1f}s")
            judged = True
        started = time.monotonic()
        done = subprocess.run(["bash", "-euo", "pipefail", "-c", block.body], cwd=folder,
                              env=_environment(settings, live_server), capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, (f"docs/campaign.md line {block.line} failed (exit {done.returncode}):\n"
                                      f"{block.body}\n--- stdout\n{done.stdout[-3000:]}\n--- stderr\n"
                                      f"{done.stderr[-3000:]}")
        print(f"line {block.line}: {time.monotonic() - started:.1f}s")
        outputs.append(done.stdout)
    assert judged, "no report block: the raters' judging was never played"
    printed = "\n".join(outputs)

    # Section 3: every clip checked; the ones with the index at the end prepared; all play now.
    assert Clip.objects.filter(dataset__name=DATASET).count() == len(rows) == 60
    assert f"media check: {len(rows)} of {len(rows)} clips play in browsers; 0 failed" in printed
    # Section 5: the pool with the guide's training and gold pairs.
    pool = Pool.objects.get(name=POOL, dataset__name=DATASET)
    assert PooledPair.objects.filter(pool=pool, role="training").count() == 3
    assert PooledPair.objects.filter(pool=pool, role="gold").count() == 4
    assert "known pairs: 3 training and 4 gold listed, 7 new to the pool" in printed
    # Section 6: every rater got an invitation link on the guide's address, none a password.
    links = (folder / "rater-links.csv").read_text().splitlines()
    assert links[0] == "username,link" and len(links) == 4
    assert all(line.split(",")[1].startswith("https://rejudge.example.org/") for line in links[1:])
    assert "https://rejudge.example.org/" in printed  # dana's, printed once
    # Section 11: the release, downloaded and verified by the client, with every pool pair judged.
    release = Release.objects.get(name=RELEASE, version=1)
    downloaded = folder / "data" / f"{RELEASE}-v1"
    assert (downloaded / "qrels.txt").is_file()
    qrels_lines = (downloaded / "qrels.txt").read_text().splitlines()
    assert len(qrels_lines) == release.counts["qrels_pairs"]
    # Every pool pair has its verdict in the release (each caption's original clip is in it too).
    pool_pairs = set(PooledPair.objects.filter(pool=pool, role="pool").values_list("caption__external_id",
                                                                                   "clip__external_id"))
    released = {tuple(line.split()[::2][:2]) for line in qrels_lines}  # query_id 0 doc_id relevance
    assert pool_pairs <= released
    assert f"{len(rows)} captions, {len(qrels_lines)} judged pairs" in printed
    # Section 13: the export holds the same verdicts as the release.
    exported = {tuple(line.split()) for line in (folder / "round-1.qrels").read_text().splitlines()}
    assert exported == {tuple(line.split()) for line in qrels_lines}


def test_the_example_proxies_match_what_compose_publishes_and_trusts():
    """docs/examples/: no Caddy or nginx on the test machines to load them, so what ties them to the
    stack is checked: the address compose publishes gunicorn on, the two headers it tells Rejudge to
    trust, and (nginx) the media folder its X-Accel-Redirect location serves."""
    compose = (REPO / "docker-compose.yml").read_text()
    published = re.search(r'"\$\{REJUDGE_PUBLISH:-([^}]+)\}:8000"', compose).group(1)
    proto_header = re.search(r"SECURE_PROXY_SSL_HEADER: \$\{SECURE_PROXY_SSL_HEADER:-([\w-]+),https\}", compose).group(1)
    client_header = re.search(r"REJUDGE_CLIENT_IP_HEADER: \$\{REJUDGE_CLIENT_IP_HEADER:-([\w-]+)\}", compose).group(1)
    media_root = re.search(r"MEDIA_ROOT: (\S+)", compose).group(1)
    assert (published, proto_header, client_header) == ("127.0.0.1:8000", "X-Forwarded-Proto", "X-Forwarded-For")

    caddy = [line.strip() for line in (REPO / "docs/examples/Caddyfile").read_text().splitlines()
             if line.strip() and not line.lstrip().startswith("#")]
    # Caddy's reverse_proxy passes Host and sets X-Forwarded-Proto/-For itself; nothing may undo that.
    assert caddy == ["rejudge.example.org {", f"reverse_proxy {published}", "}"]

    nginx = (REPO / "docs/examples/nginx.conf").read_text()
    assert f"proxy_pass http://{published};" in nginx
    assert f"proxy_set_header {proto_header} $scheme;" in nginx
    assert f"proxy_set_header {client_header} $proxy_add_x_forwarded_for;" in nginx  # the client's address last
    assert "proxy_set_header Host $host;" in nginx
    assert re.search(r"location /protected-media/ \{\s*internal;\s*alias " + re.escape(media_root) + r"/;", nginx)
    assert nginx.count("{") == nginx.count("}")
