"""`manage.py evaluate` on TREC qrels and runs as files come (issue 40): queries listed in several
places of a file, tied scores, graded and -1 judgments, CRLF line ends, a blank line, several
runs in one process; the trec_eval layout line for line against pytrec_eval (the C trec_eval)
through the file-only start and through Django alike, Judged@K against ir_measures, and the
file-only start importing no NumPy (pytrec_eval's wrapper and the analysis modules of arrays
import it; trec_eval's measures need neither).
"""
import json
import os
import random
import subprocess
import sys
from io import StringIO
from pathlib import Path

import ir_measures
import pytest
import pytrec_eval
from django.core.management import call_command

REPO = Path(__file__).resolve().parents[4]
# pytrec_eval's names, in trec_eval's measure table order (the order trec_eval -q prints them).
MEASURES = ["map", "bpref", "recip_rank", "P_5", "P_10", "ndcg_cut_10"]
PYTREC_PARAMS = {"map", "bpref", "recip_rank", "P.5,10", "ndcg_cut.10"}


def write_files(folder: Path, seed: int = 40) -> tuple[Path, list[Path]]:
    """Qrels of 12 queries (q10 .. q21; q21 has no run line) with grades -1, 0, 1, 2, lines
    shuffled so each query's lines are spread over the file, CRLF line ends; two runs of 11
    queries (q22 is not judged) whose scores take few values (ties everywhere), also shuffled,
    one with a blank line in the middle."""
    rng = random.Random(seed)
    judged = {f"q{10 + i}": rng.sample(range(400), 120) for i in range(12)}
    lines = [f"{q} 0 d{d:03d} {rng.choice([-1, 0, 0, 0, 1, 1, 2])}" for q, docs in judged.items() for d in docs]
    rng.shuffle(lines)
    qrels = folder / "qrels.txt"
    qrels.write_bytes(("\r\n".join(lines) + "\r\n").encode())
    runs = []
    for r in range(2):
        lines = []
        for i in range(11):
            q = f"q{11 + i}"
            docs = rng.sample(range(400), rng.choice([3, 8, 60, 200]))
            lines += [f"{q} Q0 d{d:03d} {rank} {rng.choice([0.5, 1.0, 1.5, 2.0, 2.5])} run{r}"
                      for rank, d in enumerate(docs, start=1)]
        rng.shuffle(lines)
        if r == 1:
            lines.insert(len(lines) // 2, "")
        path = folder / f"run{r}.txt"
        path.write_text("\n".join(lines) + "\n")
        runs.append(path)
    return qrels, runs


def pytrec_eval_lines(qrels: Path, run: Path) -> list[str]:
    """trec_eval -q's lines for the six measures: per query (ids as text), then the means."""
    with qrels.open() as q, run.open() as r:
        judgments = pytrec_eval.parse_qrel(q)
        scores = pytrec_eval.parse_run(line for line in r if line.strip())
    results = pytrec_eval.RelevanceEvaluator(judgments, PYTREC_PARAMS).evaluate(scores)
    lines = [f"{m:<22}\t{q}\t{results[q][m]:6.4f}" for q in sorted(results) for m in MEASURES]
    return lines + [f"{m:<22}\tall\t{sum(v[m] for v in results.values()) / len(results):6.4f}" for m in MEASURES]


def evaluate_args(qrels: Path, runs: list[Path], output: str = "trec_eval") -> list[str]:
    return [*map(str, runs), "--judgments", str(qrels), "--judgments-format", "qrels", "--output", output,
            "--measures", *MEASURES]


def test_trec_eval_layout_equals_pytrec_eval_through_the_file_only_start_and_django(tmp_path):
    qrels, runs = write_files(tmp_path)
    expected = []
    for r, run in enumerate(runs):
        expected += [f"{'runid':<22}\tall\trun{r}", *pytrec_eval_lines(qrels, run)]
    done = subprocess.run([sys.executable, "-X", "importtime", str(REPO / "manage.py"), "evaluate",
                           *evaluate_args(qrels, runs)], cwd=REPO, capture_output=True, text=True, timeout=300,
                          env=dict(os.environ, DJANGO_SETTINGS_MODULE="config.settings"))
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == expected
    through_django = StringIO()
    call_command("evaluate", *evaluate_args(qrels, runs), stdout=through_django)
    assert through_django.getvalue() == done.stdout
    imported = {line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines() if line.startswith("import time:")}
    assert "annotation.services.evaluation.measures" in imported  # the listing is there
    assert "pytrec_eval_ext" in imported
    for unneeded in ("numpy", "django", "annotation.services.evaluation.moments", "annotation.formats.fire_json",
                     "annotation.formats.rater_labels"):
        assert unneeded not in imported


def test_judged_at_k_equals_ir_measures_on_tied_scores(tmp_path):
    qrels, runs = write_files(tmp_path, seed=7)
    out = StringIO()
    call_command("evaluate", *evaluate_args(qrels, runs, output="json"), stdout=out)
    docs = [json.loads(line) for line in out.getvalue().splitlines()]
    with qrels.open() as q:
        judgments = pytrec_eval.parse_qrel(q)
    for run, doc in zip(runs, docs):
        with run.open() as r:
            scores = pytrec_eval.parse_run(line for line in r if line.strip())
        # trec_eval's order (score descending, ties by doc id descending) as distinct scores, which
        # ir_measures' judged provider then keeps.
        ranked = {q: {d: -rank for rank, d in enumerate(sorted(s, key=lambda d: (s[d], d), reverse=True))}
                  for q, s in scores.items() if q in judgments}
        truth = {q: judgments[q] for q in ranked}
        expected = ir_measures.calc_aggregate([ir_measures.Judged @ 5, ir_measures.Judged @ 10], truth, ranked)
        assert doc["judged"]["P_5"]["judged"] == pytest.approx(expected[ir_measures.Judged @ 5], abs=1e-12)
        assert doc["judged"]["P_10"]["judged"] == pytest.approx(expected[ir_measures.Judged @ 10], abs=1e-12)
        assert doc["judged"]["ndcg_cut_10"]["judged"] == doc["judged"]["P_10"]["judged"]


@pytest.mark.parametrize("bad, line", [
    ("q1 Q0 d1 1 1.0 t\nq1 Q0 d1 2 0.5 t\n", 2),  # listed twice
    ("q1 Q0 d1 1 1.0 t\nq2 Q0 d1 1 1.0 t\nq1 Q0 d1 2 0.5 t\n", 3),  # listed twice, lines apart
    ("q1 Q0 d1 0 1.0 t\n", 1),  # rank 0
    ("q1 Q0 d1 1 inf t\n", 1),  # not finite
])
def test_a_bad_run_is_refused_naming_its_line(tmp_path, bad, line):
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("q1 0 d1 1\nq2 0 d1 0\n")
    run = tmp_path / "bad.txt"
    run.write_text(bad)
    done = subprocess.run([sys.executable, str(REPO / "manage.py"), "evaluate", *evaluate_args(qrels, [run])],
                          cwd=REPO, capture_output=True, text=True, timeout=300,
                          env=dict(os.environ, DJANGO_SETTINGS_MODULE="config.settings"))
    assert done.returncode == 1 and done.stdout == ""
    assert f"bad.txt, line {line}" in done.stderr


@pytest.mark.parametrize("bad, line", [
    ("q1 0 d1 1\nq2 0 d1 0\nq1 0 d1 0\n", 3),  # judged twice, lines apart
    ("q1 0 d1 -2\n", 1),  # below -1
])
def test_bad_qrels_are_refused_naming_the_line(tmp_path, bad, line):
    qrels = tmp_path / "qrels.txt"
    qrels.write_text(bad)
    run = tmp_path / "run.txt"
    run.write_text("q1 Q0 d1 1 1.0 t\n")
    done = subprocess.run([sys.executable, str(REPO / "manage.py"), "evaluate", *evaluate_args(qrels, [run])],
                          cwd=REPO, capture_output=True, text=True, timeout=300,
                          env=dict(os.environ, DJANGO_SETTINGS_MODULE="config.settings"))
    assert done.returncode == 1 and done.stdout == ""
    assert f"qrels.txt, line {line}" in done.stderr
