"""Run-aware judging: what to judge next, when to stop, and how sure the numbers are (issue 15).

Pure NumPy/SciPy, no Django. Sub-modules:

- :mod:`.strategies` -- the judging order of one query's pool pairs under each strategy, their
  inclusion probabilities, and the round-robin key that interleaves queries in a pool's queue;
- :mod:`.stopping` -- per-query stopping rules and the pool budget helper;
- :mod:`.estimates` -- Horvitz-Thompson estimates of C@K, AP and nDCG per run from partial
  judgments, with 95% intervals and the system ranking;
- :mod:`.simulation` -- replays a fully judged pool under each strategy (seeded repeats) and
  writes the curves as CSV and standalone SVG.
"""
