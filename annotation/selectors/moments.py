"""Reads of the moments area: pool designs and their progress, stored reports as CSV and charts."""
from __future__ import annotations

import io

from django.db.models import Count, Prefetch, Q, QuerySet

from annotation.analysis.moments import IOU_TOLERANCE
from annotation.formats.csv_safe import safe_csv_writer
from annotation.analysis.query_chart import QuerySummary, render_per_query_chart_svg
from annotation.models import Dataset, MomentMember, Pool, PooledPair, Report, Run, SampledDocument


def pool_reports(*, pool: Pool, kind: str) -> QuerySet[Report]:
    return Report.objects.filter(pool=pool, kind=kind)


def moment_and_sampled_pools() -> QuerySet[Pool]:
    """Pools with a moment or a sampled design, newest first, with their design and counts."""
    return (Pool.objects.filter(Q(moment_design__isnull=False) | Q(sampled_design__isnull=False))
            .select_related("dataset", "moment_design", "sampled_design")
            .annotate(pair_count=Count("pairs", filter=Q(pairs__role=PooledPair.Role.POOL), distinct=True),
                      resolved_count=Count("pairs", filter=Q(pairs__role=PooledPair.Role.POOL,
                                                             pairs__state=PooledPair.State.RESOLVED), distinct=True))
            .order_by("-created_at"))


def runs_by_dataset() -> list[dict]:
    """Datasets with their runs, for the pool forms (moment runs feed moment pools, the others
    sampled pools)."""
    datasets = Dataset.objects.order_by("name").prefetch_related(Prefetch("runs", queryset=Run.objects.order_by("name")))
    return [{"dataset": dataset, "runs": list(dataset.runs.all())} for dataset in datasets]


def moment_pool_summary(*, pool: Pool) -> dict:
    """The merge threshold, spans and members, and the spans a chain stretched so far that some
    member's IoU with the judged span fell below the threshold (worth a look before trusting them)."""
    design = pool.moment_design
    spans = PooledPair.objects.filter(pool=pool, role=PooledPair.Role.POOL)
    members = MomentMember.objects.filter(pair__pool=pool).values_list("pair_id", "start", "end", "pair__start", "pair__end")
    smallest: dict[int, float] = {}
    member_count = 0
    for pair, start, end, span_start, span_end in members.iterator(chunk_size=20_000):
        # A member lies inside its span, so its IoU with the span is its share of the span's length.
        smallest[pair] = min((end - start) / (span_end - span_start), smallest.get(pair, 1.0))
        member_count += 1
    merged = spans.annotate(n=Count("moment_members")).filter(n__gte=2).count()
    return {"iou_threshold": design.iou_threshold, "spans": spans.count(), "members": member_count,
            "merged_spans": merged,
            "stretched_spans": sum(1 for share in smallest.values() if share < design.iou_threshold - IOU_TOLERANCE),
            "resolved": spans.filter(state=PooledPair.State.RESOLVED).count(),
            "relevant": spans.filter(state=PooledPair.State.RESOLVED, resolved_label=PooledPair.Answer.RELEVANT).count()}


def moment_spans(*, pool: Pool, caption_external_id: str | None = None) -> QuerySet[PooledPair]:
    """The pool's judged spans with the predictions merged into each."""
    spans = (PooledPair.objects.filter(pool=pool, role=PooledPair.Role.POOL).select_related("caption", "clip")
             .prefetch_related(Prefetch("moment_members", queryset=MomentMember.objects.select_related("run")
                                        .order_by("run__name", "rank")))
             .order_by("caption__external_id", "clip__external_id", "start", "end"))
    if caption_external_id:
        spans = spans.filter(caption__external_id=caption_external_id)
    return spans


def sampled_pool_summary(*, pool: Pool) -> dict:
    """Per stratum: pooled documents, sampled ones, and how many of those are judged and relevant;
    and the judgments the sample saves against judging the whole depth."""
    design = pool.sampled_design
    per_stratum = {row["stratum"]: row for row in SampledDocument.objects.filter(pool=pool).values("stratum").annotate(
        pooled=Count("pk"), sampled=Count("pk", filter=Q(sampled=True)),
        judged=Count("pk", filter=Q(pair__state=PooledPair.State.RESOLVED)),
        relevant=Count("pk", filter=Q(pair__state=PooledPair.State.RESOLVED,
                                      pair__resolved_label=PooledPair.Answer.RELEVANT)))}
    strata = []
    for index, (lo, hi, rate) in enumerate(design.strata):
        row = per_stratum.get(index, {})
        pooled, sampled = row.get("pooled", 0), row.get("sampled", 0)
        strata.append({"stratum": index, "lo": lo, "hi": hi, "rate": rate, "pooled": pooled, "sampled": sampled,
                       "realized_rate": sampled / pooled if pooled else 0.0, "judged": row.get("judged", 0),
                       "relevant": row.get("relevant", 0)})
    return {"strata": strata, "full_pool_size": design.full_pool_size, "sampled": design.sampled_count,
            "saved": design.judgments_saved,
            "saved_fraction": design.judgments_saved / design.full_pool_size if design.full_pool_size else 0.0,
            "seed": pool.seed, "size_rule": design.size_rule}


def moment_metrics_csv(*, report: Report) -> str:
    """One row per run and kind of positives, fractions as stored (papers print them x100)."""
    result = report.result
    out = io.StringIO()
    writer = safe_csv_writer(out, numeric_columns=range(3, 3 + len(result["columns"])))
    writer.writeheader(["run_id", "run", "positives", *result["columns"]])
    for row in result["runs"]:
        for positives in ("corrected", "original"):
            writer.writerow([row["run_id"], row["run"], positives, *(f"{row[positives][c]:.6f}" for c in result["columns"])])
    return out.getvalue()


def infap_csv(*, report: Report) -> str:
    """trec_eval's layout: one row per run and caption, then the run's mean as caption 'all'."""
    result = report.result
    measures = result["measures"]
    out = io.StringIO()
    writer = safe_csv_writer(out, numeric_columns=range(3, 3 + len(measures)))
    writer.writeheader(["run_id", "run", "caption", *measures])
    for row in result["runs"]:
        for query in result["queries"]:
            writer.writerow([row["run_id"], row["run"], query, *(f"{row['per_query'][m][query]:.6f}" for m in measures)])
        writer.writerow([row["run_id"], row["run"], "all", *(f"{row['mean'][m]:.6f}" for m in measures)])
    return out.getvalue()


def query_chart_svg(*, report: Report, run_id: int) -> str:
    """TRECVID's per-query chart of one run of an infAP report: its score, the median and the best
    over the report's runs. Raises LookupError when the run is not in the report."""
    result = report.result
    row = next((r for r in result["runs"] if r["run_id"] == run_id), None)
    if row is None:
        raise LookupError(f"run {run_id} is not in report {report.pk}")
    measure = result["measure"]
    stats = result["per_query_summary"]
    summary = {q: QuerySummary(q, stats[q]["median"], stats[q]["best"], tuple(stats[q]["best_runs"]), len(result["runs"]))
               for q in result["queries"]}
    return render_per_query_chart_svg(row["run"], summary, row["per_query"][measure], measure=measure,
                                      title=f"{measure} per caption: {row['run']}, report #{report.pk}")
