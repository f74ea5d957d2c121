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


# A judgment set over the same dataset (people's published verdicts) and a machine judge of it.
# (q2, v4) is a 'disagreement' verdict: no human label, so the machine's verdict on it is not compared.
SET_VERDICTS = {("q1", "v3"): "relevant", ("q1", "v4"): "not_relevant", ("q1", "v5"): "relevant",
                ("q2", "v5"): "not_relevant", ("q2", "v6"): "relevant", ("q2", "v4"): "disagreement"}
SET_MACHINE = {("q1", "v3"): "relevant", ("q1", "v4"): "relevant", ("q1", "v5"): "not_relevant",
               ("q2", "v5"): "not_relevant", ("q2", "v6"): "relevant", ("q2", "v4"): "not_relevant"}


def small_set(dataset, verdicts=SET_VERDICTS, name: str = "published"):
    import hashlib

    from annotation.models.judgment_sets import ImportedJudgment, JudgmentSet

    judgment_set = JudgmentSet.objects.create(dataset=dataset, name=name, source_format="qrels",
                                              checksum=hashlib.sha256(name.encode()).hexdigest())
    ImportedJudgment.objects.bulk_create([
        ImportedJudgment(judgment_set=judgment_set, dataset=dataset, caption=dataset.captions.get(external_id=q),
                         clip=dataset.clips.get(external_id=i), label=label) for (q, i), label in verdicts.items()])
    return judgment_set
