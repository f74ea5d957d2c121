"""The `infap` report kind: inferred AP per run and caption, from a sampled pool's judgments. A sampled
document counts as judged once its pair is resolved (the caption's original positive counts as
relevant whatever raters say, FIRE's convention); sampled documents still waiting for labels count
as unjudged, which leaves the estimate unbiased as long as labels do not arrive in an order that
depends on relevance. Pairs resolved from imported judgments when the pool was built are judged
with certainty (inclusion probability 1): each document is weighted by its own stored inclusion
probability, through the cells of annotation.analysis.sampled_pools.cell_label (formulas there).
The stratified estimator xinfAP is reported for every design; trec_eval's infAP (ir_measures)
only when every stratum has the same rate and no pair came from imports, because it assumes one
uniform sample and is biased on stratified pools.

`max_result_size` defaults to NIST's (annotation.analysis.sample_eval.TRECVID_MAX_RESULT_SIZE). The
parameters are declared on KIND; the report is computed as an operation (reports/operations.py). Its own pages and CSV show it, so it lays out no tables here.
"""
from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

from django.db import transaction

from annotation.analysis.infap import infap_trec_eval_runs, xinfap_runs
from annotation.analysis.query_chart import per_query_summary, query_sort_key
from annotation.analysis.sample_eval import TRECVID_MAX_RESULT_SIZE
from annotation.analysis.sampled_pools import cell_label
from annotation.models import Caption, Job, Pool, PooledPair, Report, Run, SampledDocument, SampledPoolDesign
from annotation.selectors.reports import FETCH
from annotation.selectors.score_matrix_runs import run_prediction_rows
from annotation.services.reports.kind import Param, ReportError, ReportKind
from annotation.services.reports.runs import report_runs
from annotation.services.reports.store import report_store

INFAP = "infap"


def sampled_design(pool: Pool) -> SampledPoolDesign:
    design = SampledPoolDesign.objects.filter(pool=pool).first()
    if design is None:
        raise ReportError(f"pool '{pool.name}' is not a sampled pool")
    return design


_STILL_OPEN = (PooledPair.State.OPEN, PooledPair.State.ADJUDICATION)
_DECIDED = (PooledPair.State.RESOLVED, PooledPair.State.DISAGREEMENT)


def _sampled_qrels(pool: Pool, design: SampledPoolDesign, caption_ext: dict[int, str]
                   ) -> tuple[dict[str, dict[str, tuple[int | str, int]]], list[dict]]:
    """Stratified qrels {caption external id: {clip pk: (cell, relevance)}} with relevance -1
    for documents not (yet) judged, and per stratum the pooled, sampled, from-imports, judged,
    relevant and waiting counts. The cell is the stratum, split by inclusion probability
    (`cell_label`), so pairs judged for certain are weighted 1 and the drawn ones by their share."""
    strata = [{"stratum": s, "lo": lo, "hi": hi, "rate": rate, "pooled": 0, "sampled": 0, "from_imports": 0, "judged": 0,
               "relevant": 0, "waiting": 0} for s, (lo, hi, rate) in enumerate(design.strata)]
    qrels: dict[str, dict[str, tuple[int | str, int]]] = defaultdict(dict)
    rows = SampledDocument.objects.filter(pool=pool).values_list(
        "caption_id", "clip_id", "stratum", "sampled", "inclusion_probability", "pair__state", "pair__resolved_label",
        "pair__is_original_positive", "pair__vote_count", "pair__resolved_by_admin")
    for caption, clip, stratum, sampled, inclusion, state, label, original, votes, by_admin in rows.iterator(
            chunk_size=FETCH):
        relevance = -1
        if sampled and original:
            relevance = 1
        elif sampled and state == PooledPair.State.RESOLVED:
            relevance = int(label == PooledPair.Answer.RELEVANT)
        rate = design.strata[stratum][2]
        qrels[caption_ext[caption]][str(clip)] = (cell_label(stratum, rate, inclusion), relevance)
        counts = strata[stratum]
        counts["pooled"] += 1
        counts["sampled"] += sampled
        # Decided with no vote and not by an admin: the verdict came from imported judgments (services/pools/build.py).
        counts["from_imports"] += bool(sampled and state in _DECIDED and not votes and not by_admin)
        counts["judged"] += relevance >= 0
        counts["relevant"] += relevance >= 1
        counts["waiting"] += bool(sampled and relevance < 0 and state in _STILL_OPEN)
    return dict(qrels), strata


@transaction.atomic
def infap_report_create(*, pool: Pool, run_ids: Sequence[int] | None = None, created_by=None,
                        job: Job | None = None, max_result_size: int | None = TRECVID_MAX_RESULT_SIZE) -> Report:
    """`max_result_size`: NIST's rule (default 1,000, as TRECVID scores); None scores every rank
    without rescaling, as trec_eval does."""
    design = sampled_design(pool)
    runs = report_runs(pool, run_ids, Run.Kind.CLIP)
    caption_ext = dict(Caption.objects.filter(dataset=pool.dataset_id).values_list("pk", "external_id"))
    qrels, strata = _sampled_qrels(pool, design, caption_ext)
    name_of = {run.pk: run.name for run in runs}
    ranked: dict[str, dict[str, list[str]]] = {run.name: defaultdict(list) for run in runs}
    for run, caption, clip, _ in run_prediction_rows(runs=runs, depth=pool.depth):
        ranked[name_of[run]][caption_ext[caption]].append(str(clip))

    from_imports = sum(s["from_imports"] for s in strata)
    # Pairs taken from imports with probability 1 beside a sample at rate < 1 make the design stratified.
    uniform = len({rate for _, _, rate in design.strata}) == 1 and (not from_imports or design.strata[0][2] == 1)
    scores = {"xinfAP": xinfap_runs(ranked, qrels, max_result_size=max_result_size)}
    if uniform:
        flat = {q: {d: relevance for d, (_, relevance) in judged.items()} for q, judged in qrels.items()}
        scores["infAP"] = infap_trec_eval_runs(ranked, flat)
    measure = "infAP" if uniform else "xinfAP"
    queries = sorted(qrels, key=query_sort_key)
    judged = sum(s["judged"] for s in strata)
    waiting = sum(s["waiting"] for s in strata)
    result = {
        "measure": measure,
        "measures": list(scores),
        "conventions": (f"xinfAP as NIST's sample_eval.pl: AP rescaled by R_hat/{max_result_size} when the estimated "
                        f"relevant count R_hat exceeds {max_result_size} (TRECVID's max result size)"
                        if max_result_size else "xinfAP without a max result size (every rank scored, no rescaling)")
                       + "; each run in its own rank order up to the pool depth; trec_eval's infAP, where shown, has "
                         "no max result size",
        "uniform_sample": uniform,
        "strata": strata,
        "judgments": {"full_pool_size": design.full_pool_size, "sampled": design.sampled_count,
                      "from_imports": from_imports, "judged": judged, "waiting": waiting, "final": waiting == 0,
                      "saved": design.judgments_saved,
                      "saved_fraction": design.judgments_saved / design.full_pool_size if design.full_pool_size else 0.0},
        "queries": queries,
        "runs": [{"run_id": run.pk, "run": run.name,
                  "mean": {m: scores[m][run.name].mean for m in scores},
                  "per_query": {m: scores[m][run.name].per_query for m in scores}} for run in runs],
        "queries_without_relevant": list(scores[measure][runs[0].name].queries_without_relevant) if runs else [],
    }
    summary = per_query_summary({run.name: scores[measure][run.name].per_query for run in runs})
    result["per_query_summary"] = {q: {"median": s.median, "best": s.best, "best_runs": list(s.best_runs)}
                                   for q, s in summary.items()}
    params = {"pool_id": pool.pk, "run_ids": [run.pk for run in runs], "strata": design.strata, "seed": pool.seed,
              "size_rule": design.size_rule, "max_result_size": max_result_size,
              "judged": "sampled pairs resolved by raters, and pairs resolved from imported judgments (inclusion "
                        "probability 1); a caption's original positive counts as relevant",
              "weights": "Horvitz-Thompson: each judged pair by its own inclusion probability (strata split into cells "
                         "of pairs judged for certain and pairs drawn; annotation/analysis/sampled_pools.py)"}
    return report_store(kind=INFAP, dataset_id=pool.dataset_id, pool=pool, title=f"Inferred AP: {pool.name}",
                        params=params, result=result, job=job, created_by=created_by)


KIND = ReportKind(name=INFAP, title=None, params={
    "run_ids": Param(list, None, "ids of the clip runs of the dataset scored (null: the pool's runs)", 1, None,
                     nullable=True, unique_sorted=False),
    "max_result_size": Param(int, TRECVID_MAX_RESULT_SIZE, "NIST's rule: AP rescaled by R_hat/max_result_size when the "
                             "estimated relevant count exceeds it (null: every rank scored, no rescaling)", 1,
                             1_000_000, nullable=True),
})
