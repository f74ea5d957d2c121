"""Release pages: the list of releases (admins get a form to make one, which shows each pool's
resolved share) and one release with its sources, counts, leaderboard, files and checksums, and
its download. Readers as the API's: admins and researchers, anyone but raters when
REJUDGE_RELEASES_PUBLIC is on.

Every figure is named in words (issue 35: the page showed field names such as `fire_annotations`
and `rank_c...` cut off); the field name stays in a tooltip, and in the archive's CSV."""
from __future__ import annotations

from functools import wraps

from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied
from django.shortcuts import get_object_or_404, render
from django.views.decorators.csrf import ensure_csrf_cookie

from django.utils.safestring import mark_safe

from annotation import roles
from annotation.analysis.judged import JUDGED_THRESHOLD, below_threshold
from annotation.query_numbers import id_or_none
from annotation.analysis.leaderboard import judged_notes, leaderboard_svg
from annotation.formats.release_documents import (JUDGED_AT_K, judgment_set_phrase, resolved_share_sentence,
                                                  run_cut_sentence, unresolved_scoring)
from annotation.models import Pool
from annotation.selectors.pools import PAIR_COUNT_WORDS, pool_pair_counts
from annotation.selectors.releases import release_list
from annotation.selectors.reports import judgment_sets_listed
from frontend.views.submissions import submissions_context

#: The release's other counts (release.json "counts") in words, in the page's order.
COUNT_WORDS = {
    "qrels_pairs": "pairs in qrels.txt",
    "relevant": "of them relevant",
    "not_relevant": "of them not relevant",
    "queries": "queries (captions) in qrels.txt",
    "raters": "raters",
    "labels": "labels on pool pairs",
    "label_rows": "rows of labels.csv (every raw label)",
    "fire_annotations": "resolved pairs in fire.json",
    "fire_disagreements": "pairs without a majority in fire.json",
    "sample_eval_files": "TRECVID sample_eval qrels files (sampled pools)",
}
#: Counts shown elsewhere on the page, or not counts.
_SHOWN_APART = {"changes", "agreement", "pool_pairs", "unresolved_allowed", "moment_files", "moment_files_left_out",
                "leaderboard_left_out", "pool_bias_left_out"}


def _percent(value) -> str:
    return "–" if value is None else f"{100 * value:.1f}"


def release_reader(view):
    @wraps(view)
    def checked(request, *args, **kwargs):
        # Who may read releases: annotation/roles.py may_read_releases (one rule, the API's too).
        if not roles.may_read_releases(request.user):
            if not request.user.is_authenticated:
                return redirect_to_login(request.get_full_path())
            raise PermissionDenied("Releases are for admins and researchers.")
        return view(request, *args, **kwargs)

    return ensure_csrf_cookie(checked)


@release_reader
def release_index(request):
    is_admin = roles.is_admin(request.user)
    context = {"releases": roles.releases_readable_by(request.user, release_list())[:500], "is_admin": is_admin}
    if is_admin:
        pools = list(Pool.objects.select_related("dataset").order_by("dataset__name", "name"))
        # Each pool's resolved share, shown as the admin picks it (before submitting).
        for pool in pools:
            counts = pool_pair_counts(pools=pool)
            pool.unresolved_pairs, pool.share_sentence = counts["unresolved"], resolved_share_sentence(counts)
        context |= {"pools": pools, "judgment_sets": judgment_sets_listed(),
                    "chosen_pool": id_or_none(request.GET.get("pool", ""))}
    return render(request, "frontend/releases/index.html", context)


def _sources(release) -> list[dict]:
    rows = []
    for source in release.sources:
        row = {"kind": "pool" if source["kind"] == "pool" else "judgment set", "name": source["name"]}
        if source["kind"] == "pool":
            # Releases made before pair counts were recorded give the pooled pairs only.
            row["counts"] = source.get("pair_counts") or {"pooled": source.get("pairs")}
        else:
            row["phrase"] = (judgment_set_phrase(source) if "relevant" in source
                             else f"{source.get('judgments', 0)} judgments")
        rows.append(row)
    return rows


def _other_counts(counts: dict) -> list[dict]:
    rows = [{"words": words, "field": key, "value": counts[key]} for key, words in COUNT_WORDS.items() if key in counts]
    rows += [{"words": key.replace("_", " "), "field": key, "value": value} for key, value in counts.items()
             if key not in COUNT_WORDS and key not in _SHOWN_APART and not isinstance(value, (dict, list))]
    return rows


def _interval_words(board: dict) -> dict[str, str]:
    """Each side's interval in a few words ("95% bootstrap interval"), as the leaderboard names it
    (older leaderboards: from their parameters)."""
    labels = dict(board.get("interval_labels") or {})
    confidence = (board.get("params") or {}).get("confidence")
    fallback = (f"{100 * confidence:g}% bootstrap interval" if confidence and "bootstrap" in (board.get("interval") or "")
                else "interval")
    return {side: labels.get(side) or fallback for side in ("original", "corrected")}


def provenance_words(provenance: dict | None) -> str:
    """Where a leaderboard run came from, in words (leaderboard.json's `provenance`: people in the
    release's pseudonyms); empty for releases made before rows carried it."""
    if not provenance:
        return ""

    def day(value) -> str:
        return str(value)[:10] if value else "?"

    by = f" by {provenance['by']}" if provenance.get("by") else ""
    if provenance.get("kind") != "submitted run":
        return f"pooled run, added {day(provenance.get('at'))}{by}"
    accepted = f" by {provenance['accepted_by']}" if provenance.get("accepted_by") else ""
    return (f"submitted run (submission {provenance.get('submission')} to {provenance.get('submitted_to')}), "
            f"submitted {day(provenance.get('at'))}{by}, accepted {day(provenance.get('accepted_at'))}{accepted}; "
            f"its {provenance.get('holes')} holes judged by people")


def _leaderboard(board: dict) -> dict:
    """The leaderboard as the page's two tables: scores (each run's A (B + C) per measure and its
    Judged@K) and, per measure, values with their intervals and ranks."""
    measures = list(board["measures"])
    judged_of = board.get("judged_of") or {}
    judged_names = list(dict.fromkeys(name for name in (judged_of.get(m) for m in measures) if name))
    runs = sorted(board["runs"], key=lambda r: (r["rank_corrected"][measures[0]], r["run"]))
    intervals = _interval_words(board)
    # "85.0 (75.0 + 10.0)" may break before its parenthesis, never inside a number.
    # A Judged@K below the leaderboard's threshold marks the measures cut at K not comparable
    # (analysis/judged.py): flagged beside the value, with the rule in words under the table.
    threshold = board.get("judged_threshold", JUDGED_THRESHOLD.default)
    scores = [{"run": r["run"], "provenance": provenance_words(r.get("provenance")),
               "cells": [r["fire"][m].partition(" (")[::2] for m in measures],
               "judged": [(_percent((r.get("judged") or {}).get(name)),
                           below_threshold((r.get("judged") or {}).get(name), threshold)) for name in judged_names]}
              for r in runs]
    groups = []
    for m in measures:
        rows = []
        for r in sorted(board["runs"], key=lambda r: (r["rank_corrected"][m], r["run"])):
            o, c = r["original"][m], r["corrected"][m]
            rows.append({"run": r["run"], "original": _percent(o["value"]),
                         "original_interval": f"{_percent(o['low'])} – {_percent(o['high'])}",
                         "corrected": _percent(c["value"]),
                         "corrected_interval": f"{_percent(c['low'])} – {_percent(c['high'])}",
                         "rank_original": r["rank_original"][m], "rank_corrected": r["rank_corrected"][m],
                         "rank_change": r["rank_change"][m],
                         "judged": _percent((r.get("judged") or {}).get(judged_of[m])) if judged_of.get(m) else None,
                         "judged_note": judged_notes(board, r).get(m)})
        tau = board.get("kendall_tau", {}).get(m)
        groups.append({"measure": m, "judged_name": judged_of.get(m), "rows": rows,
                       "tau": "undefined (fewer than two runs, or an ordering all tied)" if tau is None else f"{tau:.2f}"})
    judged_headers = [{"name": name, "words": f"{name}, percent of the top {name.partition('@')[2]} with a verdict"}
                      for name in judged_names]
    flagged = any(flag for row in scores for _, flag in row["judged"])
    flag_words = (f"Judged@K below {100 * threshold:g}%: the run's measures cut at K are not comparable with the "
                  f"leaderboard (the clips without a verdict in its top K count as not relevant)")
    return {"pool": board.get("pool"), "measures": measures, "judged_headers": judged_headers, "scores": scores,
            # Releases made before rows carried their provenance show no such column.
            "provenance": any(row["provenance"] for row in scores),
            "flagged": flagged, "flag_words": flag_words,
            "groups": groups, "intervals": intervals, "interval": board.get("interval"),
            "unjudged": board.get("unjudged"), "conventions": board.get("conventions"),
            # leaderboard_svg escapes every text it writes, so its markup can go in as it is.
            "svg": mark_safe(leaderboard_svg(board))}  # noqa: S308


def _pool_bias(bias: dict) -> dict:
    """The leaderboard's runs left out in turn, as the page's table: per run and measure With,
    Without and the difference in percent, then Judged@K of the leave-one-out run."""
    measures, judged = bias["measures"], bias["judged_measures"]
    rows = [{"run": r["run"], "pairs_removed": r["pairs_removed"], "relevant_removed": r["relevant_removed"],
             "cells": [{"with": _percent(r["with"][m]), "without": _percent(r["without"][m]),
                        "difference": "–" if r["difference"][m] is None else f"{100 * r['difference'][m]:+.1f}"}
                       for m in measures],
             "judged": [_percent(r["judged_without"][j]) for j in judged]} for r in bias["runs"]]
    return {"pool": bias["pool"], "measures": measures, "judged_measures": judged, "rows": rows,
            "conventions": bias["conventions"]}


@release_reader
def release_detail(request, release_id: int):
    release = get_object_or_404(roles.releases_readable_by(request.user, release_list()), pk=release_id)
    versions = roles.releases_readable_by(request.user, release_list(name=release.name))
    counts = dict(release.counts)
    totals = counts.get("pool_pairs")
    totals = totals if isinstance(totals, dict) else None
    board = release.leaderboard
    leaderboard = _leaderboard(board) if board and board.get("runs") else None
    return render(request, "frontend/releases/detail.html", {
        "release": release, "leaderboard": leaderboard, "versions": versions, "sources": _sources(release),
        # A total row only when there is more than one pool to add up.
        "totals": totals if totals and sum(s["kind"] == "pool" for s in release.sources) > 1 else None,
        "pair_words": PAIR_COUNT_WORDS,
        "share": resolved_share_sentence(totals, made=True) if totals and totals.get("pooled") else None,
        "unresolved": bool(totals and totals.get("unresolved")),
        "unresolved_scoring": unresolved_scoring({"leaderboard_estimated": bool(board and board.get("estimator"))}),
        # The depth the runs were cut at (a sampled design's leaderboard cuts at the pool's, asked or not).
        "run_cut": run_cut_sentence({**board.get("params", {}), "depth": board.get("depth")} if board else None),
        "judged_at_k": JUDGED_AT_K,
        "counts": _other_counts(counts), "changes": counts.get("changes", {}), "agreement": counts.get("agreement", {}),
        "leaderboard_left_out": counts.get("leaderboard_left_out"), "is_admin": roles.is_admin(request.user),
        "pool_bias": _pool_bias(board["pool_bias"]) if board and board.get("pool_bias") else None,
        # Releases made before pool bias existed have neither a table nor a reason: the page says nothing.
        "pool_bias_left_out": counts.get("pool_bias_left_out"), **submissions_context(request, release)})
