"""Benchmark of the semantic proxies on the 3,492 YouCook2 validation captions.

Clip = segment, its own caption; S is 3,492 x 3,492. Prints, per mode:
  * BoW, PoS and SYN matrices (goal: all three together under 20 s, loading the spaCy model
    and WordNet included, from cold caches);
  * METEOR for a five-caption ranking-task selection: 100 sampled clips' captions (references)
    against all captions (goal: under 60 s);
  * with --full-meteor, the full METEOR matrix as well (12.2M pairs; minutes).

Usage: .venv/bin/python bench/bench_proxies.py [--youcook2 PATH] [--modes paper modern]
       [--synsets wordnet|epic100] [--clips 100] [--seed 0] [--workers 2] [--full-meteor]
No Django; nothing is downloaded.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
# The repository's excerpt (5 videos, 35 segments) unless --youcook2 names the full validation file.
DEFAULT_YOUCOOK2 = REPO / "tests" / "fixtures" / "youcook2_val_excerpt.json"


def load_youcook2(path: Path) -> list[str]:
    """Captions of all segments in file order (one clip per segment)."""
    db = json.loads(path.read_text())["database"]
    return [a["sentence"] for entry in db.values() for a in entry["annotations"]]


def _clear_caches() -> None:
    # Each mode is timed from cold resource caches (module imports stay warm).
    from annotation.analysis.proxies import text, wordnet

    text.load_tagger.cache_clear()
    wordnet._load.cache_clear()


def run_mode(caps: list[str], mode: str, synsets: str, args: argparse.Namespace) -> dict:
    import numpy as np

    from annotation.analysis.proxies import CaptionAnalyzer, proxy_matrix
    from annotation.analysis.ranking_study import sample_clips

    _clear_caches()
    clips = [[c] for c in caps]
    kw: dict = {"mode": mode, "synsets": synsets}
    if synsets == "epic100" and args.epic100_dir:
        d = Path(args.epic100_dir)
        kw["class_lists"] = (d / "EPIC_100_verb_classes.csv", d / "EPIC_100_noun_classes.csv")
    analyzer = CaptionAnalyzer(mode, synsets, class_lists=kw.get("class_lists"))
    times: dict[str, float] = {}
    stats: dict[str, str] = {}
    t_all = time.perf_counter()
    for name in ("bow", "pos", "syn"):
        t = time.perf_counter()
        m = proxy_matrix(name, clips, caps, analyzer=analyzer, **kw)
        times[name] = time.perf_counter() - t
        off = m[~np.eye(len(caps), dtype=bool)]
        stats[name] = f"mean off-diagonal {off.mean():.4f}, share > 0 {np.mean(off > 0):.3f}"
    times["bow+pos+syn"] = time.perf_counter() - t_all

    chosen = sample_clips(len(caps), args.clips or min(100, len(caps)), args.seed)
    owner = [-1] * len(caps)
    for row, i in enumerate(chosen):
        owner[i] = row
    t = time.perf_counter()
    met = proxy_matrix(
        "met", [[caps[i]] for i in chosen], caps, analyzer=analyzer, caption_owner=owner,
        workers=args.workers, **kw,
    )
    times["met_selection"] = time.perf_counter() - t
    stats["met_selection"] = f"{met.shape[0]} x {met.shape[1]} = {met.size:,} pairs, max {met.max():.4f}"
    if args.full_meteor:
        t = time.perf_counter()
        full = proxy_matrix("met", clips, caps, analyzer=analyzer, workers=args.workers, **kw)
        times["met_full"] = time.perf_counter() - t
        stats["met_full"] = f"{full.size:,} pairs, {full.size / times['met_full']:,.0f} pairs/s"
    return {"times": times, "stats": stats}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--youcook2", type=Path, default=DEFAULT_YOUCOOK2)
    p.add_argument("--modes", nargs="+", default=["paper", "modern"], choices=["paper", "modern"])
    p.add_argument("--synsets", default="wordnet", choices=["wordnet", "epic100"])
    p.add_argument("--epic100-dir", default=None, help="folder with EPIC_100_{verb,noun}_classes.csv")
    p.add_argument("--clips", type=int, default=None, help="clips sampled (default 100, or every clip of a smaller file)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--workers", type=int, default=min(2, os.cpu_count() or 1))
    p.add_argument("--full-meteor", action="store_true")
    args = p.parse_args(argv)

    sys.path.insert(0, str(REPO))
    caps = load_youcook2(args.youcook2)
    print(f"YouCook2 validation: {len(caps)} captions ({len(set(caps))} distinct), "
          f"{os.cpu_count()} cores, METEOR workers {args.workers}, synsets {args.synsets}")
    ok = True
    for mode in args.modes:
        res = run_mode(caps, mode, args.synsets, args)
        t, s = res["times"], res["stats"]
        print(f"\n[{mode}]")
        for name in ("bow", "pos", "syn"):
            print(f"  {name.upper():4s} {t[name]:7.2f} s   {s[name]}")
        goal = t["bow+pos+syn"] < 20.0
        ok &= goal
        print(f"  BoW+PoS+SYN {t['bow+pos+syn']:7.2f} s  (goal < 20 s: {'met' if goal else 'MISSED'};"
              " includes loading spaCy and WordNet and tagging)")
        goal = t["met_selection"] < 60.0
        ok &= goal
        print(f"  MET selection {t['met_selection']:7.2f} s  ({s['met_selection']}; goal < 60 s: "
              f"{'met' if goal else 'MISSED'})")
        if "met_full" in t:
            print(f"  MET full {t['met_full']:7.2f} s  ({s['met_full']})")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
