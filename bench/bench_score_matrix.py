"""Score-matrix runs at YouCook2 scale: a 3,492 x 3,492 .npz imported and scored against four proxies.

    .venv/bin/python bench/bench_score_matrix.py [--youcook2 PATH] [--size 3492] [--seed 0]
        [--proxies bow pos syn met] [--compressed] [--compare] [--database-url URL]

Without --youcook2 a seeded dataset of --size clips with one generated cooking caption each is
made; with it, the YouCook2 validation split (youcookii_annotations_val.json: 3,492 segments =
clips, one caption each) is imported. A seeded "model" scores every caption against every clip
(float32 embeddings: a caption's vector is its clip's plus noise) and the matrix is written as an
.npz (scores, caption_ids, clip_ids). Printed:

  * the time to compute the proxy matrices (not part of the goal: they are computed once per
    dataset and stored; METEOR's full matrix dominates);
  * the time to import the .npz (checks, ids, copy under RUNS_ROOT) and to score it against all
    the proxies: each proxy on its own (proxy_ndcg_report_create, as the REST job does) and all in
    one pass (proxy_ndcg_reports_create, one sort of the run for every proxy);
  * peak RSS. Goal (issue 13): import + scoring against all four proxies under 15 s.

--compare also writes the same full ranking as a TREC run (size^2 lines, 12.2M at 3,492) and
times its import with --max-depth all and its nDCG against the first proxy from stored rows.
"""
from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

import numpy as np

from _setup import django_for_bench, peak_rss_mb

VERBS = ["add", "mix", "stir", "pour", "cut", "slice", "chop", "fry", "boil", "bake", "grill", "season", "whisk",
         "spread", "sprinkle", "place", "remove", "drain", "roll", "fold", "blend", "heat", "simmer", "serve",
         "peel", "mash", "knead", "marinate", "toss", "wrap", "flip", "dice", "melt", "coat", "squeeze", "grate"]
NOUNS = ["onion", "garlic", "tomato", "potato", "carrot", "chicken", "beef", "pork", "fish", "shrimp", "rice", "noodle",
         "egg", "flour", "butter", "oil", "salt", "pepper", "sugar", "sauce", "cheese", "bread", "dough", "lettuce",
         "cabbage", "mushroom", "pan", "pot", "bowl", "oven", "plate", "knife", "water", "milk", "cream", "lemon",
         "ginger", "chili", "bacon", "sausage", "tortilla", "avocado", "cucumber", "spinach", "broccoli", "corn",
         "bean", "tofu", "vinegar", "honey", "soy", "sesame", "parsley", "basil", "cilantro", "meat", "stock", "wine"]
ADJECTIVES = ["", "", "", "chopped", "sliced", "hot", "fresh", "small", "large", "cooked", "red", "green", "minced"]


def generated_captions(n: int, seed: int) -> list[str]:
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        verb, noun, other, place = rng.choice(VERBS), rng.choice(NOUNS), rng.choice(NOUNS), rng.choice(NOUNS)
        adjective = rng.choice(ADJECTIVES)
        text = f"{verb} the {adjective + ' ' if adjective else ''}{noun}"
        if rng.random() < 0.5:
            text += f" and {other}"
        if rng.random() < 0.5:
            text += f" in the {place}"
        out.append(text)
    return out


def make_dataset(args, tmp: Path):
    from annotation.models import Dataset
    from annotation.services.datasets.imports import dataset_import

    name = "bench-score-matrix-yc2" if args.youcook2 else f"bench-score-matrix-{args.size}-{args.seed}"
    Dataset.objects.filter(name=name).delete()
    t0 = time.perf_counter()
    if args.youcook2:
        dataset = dataset_import(path=args.youcook2, name=name, fmt="youcook2-json")
    else:
        import json

        manifest = tmp / "dataset.jsonl"
        with manifest.open("w") as out:
            for i, text in enumerate(generated_captions(args.size, args.seed)):
                out.write(json.dumps({"kind": "clip", "id": f"v{i:05d}"}) + "\n")
                out.write(json.dumps({"kind": "caption", "id": f"c{i:05d}", "text": text, "clip": f"v{i:05d}"}) + "\n")
        dataset = dataset_import(path=manifest, name=name)
    print(f"dataset '{name}': {dataset.clips.count():,} clips, {dataset.captions.count():,} captions "
          f"({time.perf_counter() - t0:.1f} s)")
    return dataset


def model_scores(dataset, seed: int) -> tuple[np.ndarray, list[str], list[str]]:
    """A seeded stand-in for a retrieval model: each caption's embedding is its clip's plus noise."""
    from annotation.models import Caption, Clip

    clips = list(Clip.objects.filter(dataset=dataset).order_by("pk").values_list("pk", "external_id"))
    captions = list(Caption.objects.filter(dataset=dataset).order_by("pk").values_list("external_id", "original_clip_id"))
    rng = np.random.default_rng(seed + 1)
    row = {pk: i for i, (pk, _) in enumerate(clips)}
    video = rng.standard_normal((len(clips), 64)).astype(np.float32)
    text = np.stack([video[row[owner]] if owner in row else np.zeros(64, np.float32) for _, owner in captions])
    text += 1.5 * rng.standard_normal(text.shape).astype(np.float32)
    return text @ video.T, [c for c, _ in captions], [v for _, v in clips]


def write_trec(path: Path, scores: np.ndarray, caption_ids: list[str], clip_ids: list[str]) -> None:
    from annotation.analysis.score_rankings import tie_order, top_k

    order = top_k(scores, scores.shape[1], tie_order(clip_ids))
    clip_arr = np.asarray(clip_ids)
    with path.open("w") as out:
        for i, q in enumerate(caption_ids):
            ranked = order[i]
            out.writelines(f"{q} Q0 {v} {r} {s:.6f} bench\n"
                           for r, (v, s) in enumerate(zip(clip_arr[ranked].tolist(), scores[i, ranked].tolist()), start=1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--youcook2", type=Path, default=None, help="youcookii_annotations_val.json (else generated)")
    parser.add_argument("--size", type=int, default=3492, help="clips = captions of the generated dataset")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--proxies", nargs="+", default=["bow", "pos", "syn", "met"])
    parser.add_argument("--mode", default="modern")
    parser.add_argument("--compressed", action="store_true", help="write the .npz with np.savez_compressed")
    parser.add_argument("--compare", action="store_true", help="also time the same ranking as a TREC run")
    parser.add_argument("--database-url", default=None)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        # The run's stored matrix and the proxy matrices go to a scratch folder, not the var/ tree.
        os.environ["RUNS_ROOT"], os.environ["EXPORT_ROOT"] = str(tmp / "runs"), str(tmp / "exports")
        django_for_bench(args.database_url)
        from django.db import connection

        from annotation.services.proxies.matrices import (proxy_matrices_compute, proxy_ndcg_report_create,
                                                          proxy_ndcg_reports_create)
        from annotation.services.datasets.runs import ALL_RANKS, run_import

        print(f"PostgreSQL: {connection.settings_dict['NAME']}")
        dataset = make_dataset(args, tmp)

        artefacts = []
        t_all = time.perf_counter()
        for proxy in args.proxies:
            t0 = time.perf_counter()
            (artefact,) = proxy_matrices_compute(dataset=dataset, proxies=[proxy], mode=args.mode)
            artefacts.append(artefact)
            print(f"proxy matrix {proxy}: {time.perf_counter() - t0:.1f} s")
        print(f"proxy matrices, all {len(args.proxies)} (computed once per dataset, not in the goal): "
              f"{time.perf_counter() - t_all:.1f} s")

        scores, caption_ids, clip_ids = model_scores(dataset, args.seed)
        path = tmp / "model.npz"
        with path.open("wb") as fh:
            (np.savez_compressed if args.compressed else np.savez)(
                fh, scores=scores, caption_ids=np.asarray(caption_ids), clip_ids=np.asarray(clip_ids))
        print(f"score matrix: {scores.shape[0]:,} captions x {scores.shape[1]:,} clips, float32, "
              f"{path.stat().st_size / 1e6:.1f} MB{' compressed' if args.compressed else ''}")

        rss_before = peak_rss_mb()
        t0 = time.perf_counter()
        run = run_import(dataset=dataset, path=path).run
        import_s = time.perf_counter() - t0
        print(f"import: {import_s:.2f} s (run {run.pk}: depth {run.depth:,}, {run.prediction_count:,} predictions, "
              "no Prediction rows)")

        t0 = time.perf_counter()
        single = []
        for artefact in artefacts:
            t1 = time.perf_counter()
            report = proxy_ndcg_report_create(run=run, artefact=artefact)
            single.append(report)
            print(f"  nDCG {artefact.params['proxy']}: mean {report.result['mean']:.4f} "
                  f"(v2t {report.result['video_to_text']:.4f}, t2v {report.result['text_to_video']:.4f}) "
                  f"in {time.perf_counter() - t1:.2f} s")
        one_by_one = time.perf_counter() - t0
        t0 = time.perf_counter()
        reports = proxy_ndcg_reports_create(run=run, artefacts=artefacts)
        together = time.perf_counter() - t0
        assert [r.result for r in reports] == [r.result for r in single], "one pass and one at a time disagree"
        print(f"scoring against {len(artefacts)} proxies: {one_by_one:.2f} s one report at a time, "
              f"{together:.2f} s in one pass")
        print(f"import + scoring: {import_s + one_by_one:.2f} s one at a time, {import_s + together:.2f} s in one pass "
              f"(goal: under 15 s)")
        print(f"peak RSS: {peak_rss_mb():,.0f} MB (before the import: {rss_before:,.0f} MB)")

        if args.compare:
            trec = tmp / "model.trec"
            t0 = time.perf_counter()
            write_trec(trec, scores, caption_ids, clip_ids)
            print(f"TREC run: {trec.stat().st_size / 1e6:.0f} MB written in {time.perf_counter() - t0:.1f} s")
            t0 = time.perf_counter()
            old = run_import(dataset=dataset, path=trec, name="trec-copy", max_depth=ALL_RANKS).run
            print(f"TREC import (--max-depth all): {time.perf_counter() - t0:.1f} s, {old.prediction_count:,} rows")
            t0 = time.perf_counter()
            report = proxy_ndcg_report_create(run=old, artefact=artefacts[0])
            print(f"  nDCG {artefacts[0].params['proxy']} from stored rows: mean {report.result['mean']:.4f} "
                  f"in {time.perf_counter() - t0:.1f} s")
            print(f"peak RSS: {peak_rss_mb():,.0f} MB")
        dataset.delete()


if __name__ == "__main__":
    main()
