"""``rejudge-client list|download|verify|evaluate|submit``.

The server and token come from ``--url`` / ``--token`` or the REJUDGE_URL / REJUDGE_TOKEN
environment variables (a token on the command line shows in the process list)."""
from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Optional, Sequence

from . import __version__
from .client import Client
from .errors import RejudgeError
from .evaluate import CONVENTIONS, DEFAULT_MEASURES, JUDGED_THRESHOLD, evaluate, to_json
from .verify import verify


def _client(args) -> Client:
    url = args.url or os.environ.get("REJUDGE_URL")
    if not url:
        raise RejudgeError("no server: pass --url https://... or set REJUDGE_URL")
    extra = {"max_bytes": args.max_bytes} if getattr(args, "max_bytes", None) is not None else {}
    return Client(url, token=args.token or os.environ.get("REJUDGE_TOKEN") or None, **extra)


def _list(args) -> int:
    with _client(args) as client:
        releases = client.releases()
    if args.json:
        print(json.dumps([r.raw for r in releases], indent=2))
        return 0
    if not releases:
        print("no releases")
    for r in releases:
        size = f"{r.bytes / 1e6:.1f} MB" if r.bytes is not None else "?"
        print(f"{r.id:>5}  {r.slug:<32}  {size:>10}  {r.created_at or ''}  {r.title}")
    return 0


def _download(args) -> int:
    with _client(args) as client:
        folder = client.download(args.release, args.dest, keep_archive=args.keep_archive)
    print(f"downloaded and verified: {folder}")
    return 0


def _verify(args) -> int:
    checked = verify(args.path)
    print(f"{args.path}: {len(checked)} files match SHA256SUMS and release.json")
    return 0


def _evaluate(args) -> int:
    results = [evaluate(args.release, run, measures=args.measures, judged_threshold=args.judged_threshold)
               for run in args.runs]
    if args.json:
        print(to_json(results))
        return 0
    for result in results:
        print(f"{result.run} (run tag {result.tag})")
        print(result.table())
        print()
    print(f"conventions: {CONVENTIONS}")
    return 0


def _submit(args) -> int:
    with _client(args) as client:
        submission = client.submit(args.release, args.run_file, name=args.name, wait=not args.no_wait,
                                   timeout=args.timeout, max_depth=args.max_depth, holes_depth=args.holes_depth)
    if args.json:
        print(json.dumps(submission, indent=2))
        return 0
    state = submission.get("state")
    print(f"submission {submission.get('id')} of {submission.get('name')} to {submission.get('release')}: {state}")
    if state == "failed":
        job = submission.get("job") or {}
        errors = job.get("errors") or []
        if not errors and job.get("message"):  # a failure that names no line: the job says why
            print(f"  {job['message']}", file=sys.stderr)
        for error in errors:
            print(f"  {error.get('text') or error}", file=sys.stderr)
        return 1
    summary = submission.get("summary") or {}
    for measure in summary.get("measures", []):
        cell = summary["values"].get(measure) or {}
        print(f"  {measure:<10} {cell.get('value')}  [{cell.get('low')}, {cell.get('high')}]")
    for name, value in (summary.get("judged") or {}).items():
        print(f"  {name:<10} {value}")
    holes = summary.get("holes")
    if holes:
        print(f"  holes: {holes['total']} pairs of the top {holes['k']} without a verdict, in "
              f"{holes['queries_with_holes']} of {summary.get('queries_answered')} queries (counted as not relevant)")
    _print_fill(summary.get("fill"), summary.get("measures") or [])
    return 0


def _number(value) -> str:
    return "-" if value is None else f"{value:.3f}"


def _in_order(values: dict, measures) -> list:
    """(name, value) in the order of the summary's measures (a fill's names add the cut: "C@1 (runs
    cut at depth 10)"); names it does not list after them."""
    def rank(name: str) -> int:
        base = name.split(" (", 1)[0]
        return measures.index(base) if base in measures else len(measures)

    return sorted(values.items(), key=lambda item: rank(item[0]))


def _print_fill(fill, measures) -> None:
    """The holes filled: by the release's machine judge (as it is, beside its agreement with the
    release), and, where people judged a designed sample of the holes, the PPI++ estimate and its
    interval, or why there is none."""
    if not isinstance(fill, dict):
        return
    judge = fill.get("judge")
    if not judge:
        print(f"  holes not filled: {fill.get('reason')}")
        return
    print(f"  holes filled by machine judge '{judge.get('name')}' ({judge.get('source')}): "
          f"{fill.get('machine_verdicts')} of {fill.get('holes')} holes given a verdict, {fill.get('unanswered')} "
          f"without one (still holes, counted as not relevant)")
    asked = fill.get("asked") or {}
    if asked.get("error"):
        print(f"    the judge endpoint: {asked['error']}")
    filled = (fill.get("machine_filled") or {}).get("values") or {}
    for measure, value in _in_order(filled, measures):
        print(f"    {measure:<10} {_number(value)}  (machine-filled)")
    agreement = fill.get("agreement") or {}
    print(f"    the judge's agreement with the release: Cohen's kappa {_number(agreement.get('kappa'))} "
          f"[{_number(agreement.get('ci_low'))}, {_number(agreement.get('ci_high'))}] over "
          f"{agreement.get('pairs_compared')} pairs both judged")
    estimate = fill.get("estimate")
    if not estimate:
        print(f"    {fill.get('statement')}")
        if fill.get("estimate_reason"):
            print(f"    no estimate with an interval: {fill['estimate_reason']}")
        return
    sample = fill.get("human_sample") or {}
    print(f"    with people's labels of {sample.get('sampled')} holes (pool '{sample.get('pool')}'): "
          f"{estimate.get('estimator')}")
    for measure, cell in _in_order(estimate.get("values") or {}, measures):
        print(f"    {measure:<10} {_number(cell.get('estimate'))}  [{_number(cell.get('ci_low'))}, "
              f"{_number(cell.get('ci_high'))}]")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="rejudge-client", description="List, download, verify and score "
                                     "Rejudge releases.")
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    def server(p):
        p.add_argument("--url", help="the platform, e.g. https://rejudge.example.org (default: $REJUDGE_URL)")
        p.add_argument("--token", help="an API token (default: $REJUDGE_TOKEN; none for anonymous reads)")

    p = sub.add_parser("list", help="list the releases")
    server(p)
    p.add_argument("--json", action="store_true", help="the API's records as JSON")
    p.set_defaults(run=_list)

    p = sub.add_parser("download", help="download a release and verify every file")
    server(p)
    p.add_argument("release", help="id, slug (name@vN) or name (its newest version)")
    p.add_argument("--dest", default=".", help="folder to download into (default: here)")
    p.add_argument("--keep-archive", action="store_true", help="keep the zip beside the folder")
    p.add_argument("--max-bytes", type=int, default=None, metavar="N",
                   help="refuse a release whose archive, or whose files together, are larger (default: 20 GiB)")
    p.set_defaults(run=_download)

    p = sub.add_parser("verify", help="check a release folder or zip against SHA256SUMS and release.json")
    p.add_argument("path")
    p.set_defaults(run=_verify)

    p = sub.add_parser("evaluate", help="score TREC run files against a downloaded release's qrels")
    p.add_argument("runs", nargs="+", metavar="RUN")
    p.add_argument("--release", required=True, help="the release folder")
    p.add_argument("--measures", nargs="+", default=list(DEFAULT_MEASURES),
                   help="ir_measures names; C@K is Success@K (default: %(default)s)")
    p.add_argument("--judged-threshold", type=float, default=JUDGED_THRESHOLD, metavar="SHARE",
                   help="flag a measure cut at K as not comparable with the leaderboard when the run's Judged@K "
                        "(share of its top K with a verdict) is below this (0 to 1; default: %(default)s)")
    p.add_argument("--json", action="store_true", help="means, Judged@K and per-query values as JSON")
    p.set_defaults(run=_evaluate)

    p = sub.add_parser("submit", help="submit a TREC run to a release: scored against its qrels.txt with Judged@K "
                                      "and its holes (top K pairs without a verdict) counted")
    server(p)
    p.add_argument("release", help="id, slug (name@vN) or name (its newest version)")
    p.add_argument("run_file", metavar="RUN", help="the TREC run file")
    p.add_argument("--name", required=True, help="the model's name")
    p.add_argument("--max-depth", type=int, default=None, metavar="N", help="the deepest rank the run may list "
                   "(the server's default and bound apply)")
    p.add_argument("--holes-depth", type=int, default=None, metavar="K", help="K of the holes (server default 10)")
    p.add_argument("--no-wait", action="store_true", help="return once the run is accepted, without its scores")
    p.add_argument("--timeout", type=float, default=600.0, help="seconds to wait for the scores (default: %(default)s)")
    p.add_argument("--json", action="store_true", help="the submission as the API gives it")
    p.set_defaults(run=_submit)
    return parser


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.run(args)
    except (RejudgeError, OSError) as exc:
        print(f"rejudge-client: error: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
