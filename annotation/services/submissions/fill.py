"""A submission's holes filled: the release's machine judge run on them, and the fill summary.

**Which judge.** A machine judge of one of the release's pools (MachineJudge.pool among the
release's sources): the one the parameter `judge` names, else the pools' only one. With none
registered the holes are not filled, and the summary says so; with several, none is chosen for the
caller (the summary names them: score again naming one).

**Its verdicts on the holes.** A judge the platform ran (it has a JudgeEndpoint) is asked for the
hole pairs through the runner (services/machine_judges/runner/run.py), in the job's first phase:
outside the job's transaction, each answer committed as it arrives and cached, so a failed job
keeps what it paid for and a rescore asks only the rest. Only if the endpoint still asks the model,
prompt and URL the judge was run with: otherwise its answers would be another judge's than the one
whose agreement is shown, and the judge gives only the verdicts it has. A judge known only from an
imported file contributes the verdicts it has on hole pairs (a pool pair the release left without a
verdict). Holes the judge could not answer are counted and stay holes (not relevant).

**The summary** (`fill`): the machine-filled measures (analysis/submission_fill.py
machine_filled_measures) with the plain statement that with no human sample of the holes the
machine's verdicts are taken as they are, beside the judge's agreement with the release's verdicts
(Cohen's kappa over the pairs both judged, the same estimator as the machine_judge report's); and,
where people judged a designed sample of the holes (the submission's incremental pool,
Submission.pool, read by services/judging/estimates.py pool_design), the PPI++ estimate and its
interval (hole_fill_estimates). A pool whose design gives no inclusion probabilities gives no
interval, and the reason, as the ppi_estimates report does.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from django.db.models import Q

from annotation.analysis.machine_agreement import cohen_kappa
from annotation.analysis.params import Param
from annotation.models import Caption, Clip, Job, MachineJudge, MachineJudgment, Release, Submission
from annotation.services.judging.estimates import pool_design, pool_inclusion_probabilities
from annotation.services.judging.inputs import dataset_external_ids
from annotation.services.judging.ppi import judge_predictions
from annotation.services.machine_judges.errors import MachineJudgeError
from annotation.services.machine_judges.lookup import judge_named
from annotation.services.machine_judges.runner.endpoints import JudgeEndpointError
# The runner's asking and its cache, reused as they are (a run over pool pairs is the same asking).
from annotation.services.machine_judges.runner.run import (JudgeRunError, PairToJudge, judge_cached_answers,
                                                          judge_pairs_ask, pair_to_judge)

#: The parameter both submission operations declare (score_submission and fill_submission).
FILL_PARAMS = {
    "judge": Param(int, None, "the machine judge whose verdicts fill the holes: the id of a machine judge of one of "
                              "the release's pools (null: their only one; none registered: no fill)", 1, None,
                   nullable=True),
}

MACHINE_AS_IS = ("With no human sample of the holes, the machine's verdicts are taken as they are: these values count "
                 "every hole the judge called relevant as relevant and every other hole as not relevant, with no "
                 "interval and no correction for the judge's errors. How far to trust them is the judge's agreement "
                 "with the release's verdicts, beside them.")

#: Agreement's bootstrap (the machine_judge report's defaults).
AGREEMENT_BOOT = 1000
AGREEMENT_SEED = 0


def release_pool_ids(release: Release) -> list[int]:
    """The pools the release was made from (its sources as frozen)."""
    return [int(s["id"]) for s in (release.sources or [])
            if isinstance(s, dict) and s.get("kind") == "pool" and isinstance(s.get("id"), int)]


def release_machine_judges(release: Release):
    return MachineJudge.objects.filter(pool_id__in=release_pool_ids(release)).select_related("endpoint", "pool")


def _where(release: Release) -> str:
    return f"the pools of release {release.slug}"


def judge_probabilities_check(judge: MachineJudge) -> None:
    """Refuses (MachineJudgeError, naming the record) a judge with a score that is no probability:
    the PPI++ estimate of the holes reads scores as P(relevant). One home of the rule and its
    message: the ppi_estimates report's judge_predictions."""
    bad = judge.judgments.filter(score__isnull=False).filter(Q(score__lt=0) | Q(score__gt=1))
    if bad.exists():  # (on PostgreSQL a NaN sorts above every number: score > 1 finds it too)
        captions, clips = dataset_external_ids(judge.dataset_id)
        judge_predictions(judge=judge, captions=captions, clips=clips)


def fill_judge_check(*, release: Release, judge_id: int | None) -> int | None:
    """What a start refuses about `judge` (MachineJudgeError with `param` 'judge'): a named judge
    that is not one of the release's pools', or whose scores are no probabilities."""
    if judge_id is None:
        return None
    try:
        judge = judge_named(release_machine_judges(release), judge_id, _where(release))
        judge_probabilities_check(judge)
    except MachineJudgeError as exc:
        exc.param = "judge"
        raise
    return judge.pk


def fill_judge(*, release: Release, judge_id: int | None) -> tuple[MachineJudge | None, str]:
    """(the judge that fills the holes, '') or (None, why there is none)."""
    judges = release_machine_judges(release)
    if judge_id is not None:
        judge = judges.filter(pk=judge_id).first()
        if judge is None:
            return None, (f"the machine judge {judge_id} named is no longer a judge of {_where(release)} (removed "
                          "since), so the holes are not filled")
    else:
        found = list(judges.order_by("pk")[:20])
        if not found:
            return None, (f"no machine judge is registered on {_where(release)}, so the holes are not filled by a "
                          "machine (they count as not relevant)")
        if len(found) > 1:
            named = ", ".join(f"{j.pk} ({j.name})" for j in found)
            return None, (f"{_where(release)} have several machine judges ({named}); none is chosen for you: score "
                          "the submission again naming one with the parameter 'judge'")
        judge = found[0]
    try:
        judge_probabilities_check(judge)
    except MachineJudgeError as exc:
        return None, f"{exc}; the holes are not filled"
    return judge, ""


def _judge_record(judge: MachineJudge, source: str) -> dict:
    return {"id": judge.pk, "name": judge.name, "model": judge.model_name, "prompt_version": judge.prompt_version,
            "pool_id": judge.pool_id, "pool": judge.pool.name if judge.pool_id else None, "source": source}


def _endpoint_changed(judge: MachineJudge) -> str:
    """Why the judge's endpoint no longer asks what the judge was run with ('' when it does)."""
    endpoint = judge.endpoint
    changed = [what for what, now, then in (("model", endpoint.model, judge.model_name),
                                            ("prompt version", endpoint.prompt_version, judge.prompt_version),
                                            ("URL", endpoint.base_url[:500], judge.source_name)) if now != then]
    if not changed:
        return ""
    return (f"the judge endpoint '{endpoint.name}' changed its {', '.join(changed)} since this judge was run, so its "
            "answers would be another judge's than the one whose agreement is shown: it was not asked, and only the "
            "judge's own verdicts fill holes")


def _pairs_to_judge(dataset_id: int, holes: Sequence[tuple[str, str]]) -> list[PairToJudge]:
    """The holes as the runner asks pairs: a clip's span where it has one, else its whole duration
    (the rule of runner/run.py judge_run_pairs for pool pairs without a span of their own)."""
    captions = {c.external_id: c for c in Caption.objects.filter(dataset_id=dataset_id,
                                                                 external_id__in={q for q, _ in holes})}
    clips = {c.external_id: c
             for c in Clip.objects.filter(dataset_id=dataset_id, external_id__in={c for _, c in holes})}
    pairs = []
    for q, c in holes:
        caption, clip = captions.get(q), clips.get(c)
        if caption is not None and clip is not None:
            pairs.append(pair_to_judge(caption, clip))
    return pairs


class HoleVerdicts:
    """The judge's verdicts on a submission's holes, gathered in the job's first phase (`ask`)."""

    def __init__(self) -> None:
        self.judge: MachineJudge | None = None
        self.reason = ""
        self.source = ""
        self.verdicts: dict[tuple[str, str], int] = {}       # hole -> 0/1
        self.predictions: dict[tuple[str, str], float] = {}  # hole -> P(relevant)
        self.asked: dict | None = None

    def ask(self, *, job: Job, release: Release, holes: Sequence[tuple[str, str]], judge_id: int | None,
            progress: Callable, may_pay: bool) -> None:
        """`may_pay`: the endpoint may be asked for holes not in its cache. Asking costs per pair
        (a FIRE-scale run has ~277,000 holes), so only a job an admin started pays: a researcher's or
        a visitor's submission is filled from what the judge already has, and an admin's rescore
        asks for the rest."""
        self.judge, self.reason = fill_judge(release=release, judge_id=judge_id)
        judge = self.judge
        if judge is None:
            return
        hole_set = set(holes)
        captions, clips = dataset_external_ids(judge.dataset_id)
        # The verdicts the judge has (an imported file's, or a run's on pool pairs that are holes).
        own = judge_predictions(judge=judge, captions=captions, clips=clips)
        labels = {(captions[q], clips[c]): int(label == MachineJudgment.Label.RELEVANT)
                  for q, c, label in judge.judgments.values_list("caption_id", "clip_id", "label")}
        for key in hole_set & set(own):
            self.verdicts[key], self.predictions[key] = labels[key], own[key]
        endpoint = judge.endpoint
        if endpoint is None:
            self.source = ("an imported file: the verdicts it has" if not judge.ran_by_platform else
                           "a run whose judge endpoint was removed since: the verdicts it has")
            return
        self.source = f"judge endpoint '{endpoint.name}', asked for the holes"
        changed = _endpoint_changed(judge)
        todo = [h for h in holes if h not in self.verdicts]
        pairs = _pairs_to_judge(judge.dataset_id, todo)
        self.asked = {"endpoint": endpoint.name, "pairs": len(pairs), "error": ""}
        if changed:
            self.source = f"judge endpoint '{endpoint.name}' (not asked: it changed since the judge's run)"
            self.asked |= {"pairs": 0, "error": changed}
            return
        if not pairs:
            return
        if not may_pay:
            self.source = (f"judge endpoint '{endpoint.name}': its cached answers only (an admin's rescore asks it "
                           "for the rest: each answer is paid for)")
            self.asked |= {"pairs": 0, "error": f"not asked for {len(pairs)} holes: only a rescore an admin of the "
                                                "release starts asks the judge endpoint"}
        else:
            self._pay(job=job, endpoint=endpoint, pairs=pairs, progress=progress)
        n = endpoint.frames_per_clip
        answers = judge_cached_answers(endpoint, pairs, n)
        for pair in pairs:
            answer = answers.get((pair.caption_id, pair.clip_id, pair.spec(n)))
            if answer is not None:
                key = (pair.caption_external, pair.clip_external)
                self.verdicts[key], self.predictions[key] = int(bool(answer.relevant)), float(answer.score)

    def _pay(self, *, job: Job, endpoint, pairs: list, progress: Callable) -> None:
        try:
            run = judge_pairs_ask(job=job, endpoint=endpoint, pairs=pairs, progress=progress)
            self.asked |= {"cached": run.cached, "answered": run.answered, "errors": run.errors,
                           "errors_listed": run.errors_listed[:10], "stopped": run.stopped}
        except (JudgeRunError, JudgeEndpointError) as exc:
            # The answers that came are cached: a rescore asks only the rest.
            self.asked["error"] = f"{exc} (the answers received are kept; score again to ask the rest)"


def _finite(value):
    return value if value is None or (isinstance(value, (int, float)) and math.isfinite(value)) else None


def judge_release_agreement(judge: MachineJudge, qrels: dict[str, dict[str, int]]) -> dict:
    """The judge's verdicts against the release's (qrels.txt: relevance > 0 is relevant) on the pairs
    both judged: Cohen's kappa with its bootstrap interval over pairs, and the counts."""
    captions, clips = dataset_external_ids(judge.dataset_id)
    human, machine = [], []
    for q, c, label in judge.judgments.values_list("caption_id", "clip_id", "label").order_by("caption_id", "clip_id"):
        release_verdict = (qrels.get(captions[q]) or {}).get(clips[c])
        if release_verdict is None:
            continue
        human.append(int(release_verdict > 0))
        machine.append(int(label == MachineJudgment.Label.RELEVANT))
    kappa = cohen_kappa(human, machine, n_boot=AGREEMENT_BOOT, seed=AGREEMENT_SEED)
    low, high = kappa.interval
    return {"against": "the release's verdicts (qrels.txt), on the pairs both judged", "pairs_compared": kappa.n,
            "judge_verdicts": judge.judgments.count(), "kappa": _finite(kappa.kappa), "ci_low": _finite(low),
            "ci_high": _finite(high), "confidence": kappa.confidence,
            "interval_method": "bootstrap percentile over pairs",
            "observed_agreement": _finite(kappa.observed_agreement), "confusion": kappa.confusion,
            "confusion_note": "rows: the release's verdict, columns: the judge's; 0 not relevant, 1 relevant"}


def fill_depth(release_depth: int | None, holes_k: int) -> int:
    """The cut the fill scores the run at: the holes' K (or the release's leaderboard cut, when
    shallower). The judge is asked for, and people sample, the holes of each top K only, and every
    hole of the scored run must be in that frame (analysis/submission_fill.py)."""
    return holes_k if release_depth is None else min(release_depth, holes_k)


def _human_sample(submission: Submission, holes: set[tuple[str, str]]) -> tuple[dict, dict, dict | None, str]:
    """(labels, inclusion probabilities, the pool and its design) of the holes people judged in the
    submission's incremental pool, and why there is no interval ('' when there may be one). The
    probabilities of the holes not drawn (yet) go too, where the design stored them."""
    pool = submission.pool
    if pool is None:
        return {}, {}, None, ("no human sample of the holes: the submission was not accepted, so nobody judged "
                              "them")
    design = pool_design(pool=pool)
    labels = {k: v for k, v in design.judged.items() if k in holes}
    what = design.design
    record = {"pool_id": pool.pk, "pool": pool.name, "design": what.to_dict(), "sampled": len(labels)}
    if not labels:
        return {}, {}, record, f"no human label of a hole yet in pool '{pool.name}'"
    if not what.intervals:
        return labels, {}, record, (f"no interval: the design of pool '{pool.name}' gives no inclusion "
                                    f"probabilities ({what.reason})"
                                    + (f". Next time: {what.next_time}" if what.next_time else ""))
    pis = pool_inclusion_probabilities(pool=pool)
    inclusion = {}
    for pair, caption, clip in zip(design.pairs.id.tolist(), design.pairs.caption.tolist(), design.pairs.clip.tolist()):
        key = (design.captions[caption], design.clips[clip])
        if key in holes and pis.get(pair) is not None:
            inclusion[key] = float(pis[pair])
    inclusion |= {k: design.inclusion[k] for k in labels}
    return labels, inclusion, record, ""


def fill_summary(*, submission: Submission, verdicts: HoleVerdicts, ranked: dict, qrels: dict,
                 holes: Sequence[tuple[str, str]], ks: Sequence[int], release_depth: int | None, holes_k: int,
                 confidence: float) -> dict:
    """The summary's `fill` (see the module docstring)."""
    from annotation.analysis.submission_fill import hole_fill_estimates, machine_filled_measures

    judge = verdicts.judge
    depth = fill_depth(release_depth, holes_k)
    out = {"holes": len(holes), "depth": depth, "judge": None, "reason": verdicts.reason, "statement": MACHINE_AS_IS,
           "depth_note": (f"the fill scores the run cut at depth {depth}: the judge is asked for, and people judge, "
                          f"the holes of each query's top {holes_k} only")}
    if judge is None:
        return out
    hole_set = set(holes)
    machine = {k: v for k, v in verdicts.verdicts.items() if k in hole_set}
    filled = machine_filled_measures(ranked, qrels, machine, ks=ks, depth=depth)
    out |= {"judge": _judge_record(judge, verdicts.source), "asked": verdicts.asked,
            "machine_verdicts": len(machine), "unanswered": len(hole_set) - len(machine),
            "machine_filled": filled, "agreement": judge_release_agreement(judge, qrels)}
    labels, inclusion, sample, why = _human_sample(submission, hole_set)
    out["human_sample"] = sample
    estimate = None
    if labels and not why:
        predictions = {k: v for k, v in verdicts.predictions.items() if k in hole_set}
        estimate = hole_fill_estimates(ranked, qrels, predictions, labels, inclusion, ks=ks, depth=depth,
                                       confidence=confidence)
    out["estimate"] = estimate
    out["estimate_reason"] = why
    return out
