"""A small pool worked by hand for the machine-judge tests.

Clips v1..v6; captions q1 (original clip v1) and q2 (original v2); two runs, depth 3:
    run A: q1 -> v1, v3, v4    q2 -> v5, v2, v6
    run B: q1 -> v3, v1, v5    q2 -> v2, v6, v5
Pool pairs: (q1, v3), (q1, v4), (q1, v5), (q2, v5), (q2, v6), and the originals (q1, v1), (q2, v2),
which the runs also propose and which stay relevant in every qrels whatever anyone says.
"""
from __future__ import annotations

from pathlib import Path

from annotation.models import PooledPair
from tests.factories import make_pool_with_runs

RUNS = (("A", [("q1", ["v1", "v3", "v4"]), ("q2", ["v5", "v2", "v6"])]),
        ("B", [("q1", ["v3", "v1", "v5"]), ("q2", ["v2", "v6", "v5"])]))
HUMAN = {("q1", "v3"): "relevant", ("q1", "v4"): "not_relevant", ("q1", "v5"): "not_relevant",
         ("q2", "v5"): "not_relevant", ("q2", "v6"): "relevant"}
MACHINE = {("q1", "v3"): "relevant", ("q1", "v4"): "relevant", ("q1", "v5"): "not_relevant",
           ("q2", "v5"): "relevant", ("q2", "v6"): "relevant"}


def small_pool():
    pool, runs = make_pool_with_runs(captions=2, clips=6, depth=3, runs=RUNS)
    return pool, runs


def pair_of(pool, query: str, item: str) -> PooledPair:
    return PooledPair.objects.get(pool=pool, role="pool", caption__external_id=query, clip__external_id=item)


def resolve_by_hand(pool, labels=HUMAN) -> None:
    """Marks the pairs resolved as people decided them (the votes themselves do not matter here)."""
    for (query, item), label in labels.items():
        PooledPair.objects.filter(pk=pair_of(pool, query, item).pk).update(state="resolved", resolved_label=label,
                                                                         vote_count=1, available=False)


def machine_file(tmp_path: Path, labels=MACHINE, *, name="judge.csv", extra: str = "") -> Path:
    lines = ["query,item,label,score,model,prompt"]
    lines += [f"{q},{i},{label},{0.9 if label == 'relevant' else 0.2},gpt-judge,umbrela-v1" for (q, i), label in labels.items()]
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n" + extra, encoding="utf-8")
    return path
