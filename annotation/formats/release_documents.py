"""The descriptive files of a release archive (services/releases), built from plain dicts: the
manifest `release.json`, `SHA256SUMS`, the datasheet `README.md`, Croissant 1.0 JSON-LD and
CITATION.cff 1.2.0. No Django: the archive's layout is a contract (clients/python reads it).

`meta` is release.json without "files": format, name, version, slug, title, dataset, created_at,
sources, aggregation, counts, plus "licence", "authors", "agreement" (summary figures),
"count_definitions" (what each pool pair count counts, in words: selectors/pools.py PAIR_COUNT_WORDS),
"leaderboard_params" (the leaderboard's parameters, None without one), "pool_bias" (the leaderboard's
runs left out in turn, services/releases/pool_bias.py; None without a table, the reason then in the
counts' "pool_bias_left_out") and "archive_url" when known.
"""
from __future__ import annotations

import json
import re
from typing import Any

RELEASE_FORMAT = "rejudge-release/1"
GUIDELINES = ("Raters mark a caption Relevant only if every element it mentions (persons, objects, places, "
              "activities, quantifiers, qualifiers, adjectives) could reasonably be considered present in the "
              "clip; when the caption is ambiguous or vague, Not relevant. Numbers and colours count. Only what "
              "the clip shows (inside its span) is judged. Raters pass a training queue with known answers first; "
              "gold pairs with known answers are mixed into their work.")
KNOWN_LIMITS = ("A caption's original clip stays relevant whatever raters said (FIRE's convention). Only pairs "
                "that some run ranked within the pool depth were judged, so systems that retrieve unpooled clips "
                "are scored against incomplete judgments: Judged@K (below) says how incomplete.")
#: How pairs without a verdict are scored: one sentence, quoted by the datasheet, release.json and the page.
UNRESOLVED_SCORING = ("Pairs without a verdict (pooled but unresolved, or never pooled) are not in qrels.txt and "
                      "count as not relevant (trec_eval's convention: unjudged = not relevant).")
#: The same where the leaderboard's corrected values are a probability sample's estimates.
UNRESOLVED_ESTIMATED = ("Pairs without a verdict (pooled but unresolved or not sampled, or never pooled) are not in "
                        "qrels.txt, so `evaluate` on it counts them not relevant; the leaderboard's corrected values "
                        "are its pool's sampled-design estimates (Horvitz-Thompson), which estimate those pairs "
                        "instead of counting them not relevant.")


def unresolved_scoring(meta: dict[str, Any]) -> str:
    """How pairs without a verdict were scored, as the release's leaderboard scored them."""
    return UNRESOLVED_ESTIMATED if meta.get("leaderboard_estimated") else UNRESOLVED_SCORING
#: What Judged@K is (ir_measures' Judged@k; docs/methodology.md section 6).
JUDGED_AT_K = ("Judged@K is the share of a run's top K with a verdict (in qrels.txt), averaged over queries; "
               "1 - Judged@K of the top K was scored as not relevant without anyone judging it.")


def run_cut_sentence(leaderboard_params: dict | None) -> str:
    """How the leaderboard's runs were cut before scoring, from its parameters (`depth`: a cut
    only when asked; none or absent: every run on its full stored list)."""
    if leaderboard_params is None:
        return "No leaderboard in this release (no pool with runs)."
    depth = leaderboard_params.get("depth")
    if depth is None:
        return "Not cut: every run is scored on its full stored list."
    return (f"Cut at depth {depth}: only each run's top {depth} ranks are scored, so a measure at a cutoff above "
            f"{depth} is the measure at {depth}.")


def share_percent(part: int, whole: int) -> str:
    """`part` of `whole` in whole percent, never rounded to 100% or 0% when it is not."""
    if not whole:
        return "n/a"
    percent = round(100 * part / whole)
    if part < whole:
        percent = min(percent, 99)
    if part and percent == 0:
        return "<1%"
    return f"{percent}%"


def resolved_share_sentence(counts: dict, *, made: bool = False) -> str:
    """E.g. "53 of 178 pooled pairs resolved (30%); 125 unresolved pairs will be scored as not
    relevant" (`made`: "were scored"), from pool_pair_counts' figures; the release form, the
    refusal, the datasheet and the release page say it."""
    pooled, resolved, unresolved = counts["pooled"], counts["resolved"], counts["unresolved"]
    sentence = f"{resolved} of {pooled} pooled pairs resolved ({share_percent(resolved, pooled)})"
    if unresolved:
        one = unresolved == 1
        verb = ("was" if one else "were") if made else "will be"
        sentence += f"; {unresolved} unresolved {'pair' if one else 'pairs'} {verb} scored as not relevant"
    return sentence


def pool_counts_phrase(counts: dict) -> str:
    """A pool's pair counts in one line: "178 pooled, 60 judged, 53 resolved, 125 unresolved, 20
    original positives" (the words' definitions are listed beside it)."""
    return (f"{counts['pooled']} pooled, {counts['judged']} judged, {counts['resolved']} resolved, "
            f"{counts['unresolved']} unresolved, {counts['original_positives']} original positives")


def judgment_set_phrase(source: dict) -> str:
    """A judgment set source's counts: "4 judgments (2 relevant, 2 not relevant)"."""
    parts = [f"{source.get(label, 0)} {label.replace('_', ' ')}" for label in ("relevant", "not_relevant")]
    if source.get("disagreement"):
        parts.append(f"{source['disagreement']} without a majority (left out of qrels.txt)")
    return f"{source['judgments']} judgments ({', '.join(parts)})"


#: Files and what they hold, in the datasheet's order.
FILE_NOTES = {
    "qrels.txt": "TREC qrels `query_id 0 clip_id relevance` of the resolved labels and each caption's original clip",
    "fire.json": "FIRE-style JSON: resolved pairs with every rater's label, and the disagreements",
    "labels.csv": "every raw label, raters pseudonymous (r001, r002... within this release)",
    "agreement.json": "agreement figures (Krippendorff's alpha, percent agreement, per rater)",
    "leaderboard.json": "the corrected leaderboard (original and corrected measures per run, with the parameters "
                        "that made it) and its runs' pool bias (`pool_bias`: each run with and without the pairs "
                        "only it contributed)",
    "leaderboard.csv": "the corrected leaderboard as a table",
    "leaderboard.svg": "the corrected leaderboard as a chart",
    "sample_eval_qrels.txt": "TRECVID sample_eval qrels of the sampled pool: every pooled clip with its stratum, -1 "
                             "where not judged (sample_eval.pl, infAP)",
    "qvhighlights.jsonl": "QVHighlights ground truth (a moment pool): each caption's corrected positive windows "
                          "(`relevant_windows`), for Moment-DETR's evaluation or `evaluate --judgments-format "
                          "qvhighlights`",
    "tvr.jsonl": "TVR ground truth (a moment pool whose captions have one positive moment each): `ts` per caption",
    "changes.json": "pairs added, changed and removed since the previous version, with the reason",
    "README.md": "this datasheet",
    "croissant.json": "Croissant 1.0 metadata",
    "CITATION.cff": "how to cite (Citation File Format 1.2.0)",
}
CONTENT_TYPES = {".txt": "text/plain", ".json": "application/json", ".csv": "text/csv", ".svg": "image/svg+xml",
                 ".md": "text/markdown", ".cff": "application/x-yaml", ".jsonl": "application/jsonlines"}
CROISSANT_CONTEXT = {
    "@language": "en", "@vocab": "https://schema.org/", "citeAs": "cr:citeAs", "column": "cr:column",
    "conformsTo": "dct:conformsTo", "cr": "http://mlcommons.org/croissant/", "rai": "http://mlcommons.org/croissant/RAI/",
    "data": {"@id": "cr:data", "@type": "@json"}, "dataType": {"@id": "cr:dataType", "@type": "@vocab"},
    "dct": "http://purl.org/dc/terms/", "examples": {"@id": "cr:examples", "@type": "@json"}, "extract": "cr:extract",
    "field": "cr:field", "fileProperty": "cr:fileProperty", "fileObject": "cr:fileObject", "fileSet": "cr:fileSet",
    "format": "cr:format", "includes": "cr:includes", "isLiveDataset": "cr:isLiveDataset", "jsonPath": "cr:jsonPath",
    "key": "cr:key", "md5": "cr:md5", "parentField": "cr:parentField", "path": "cr:path", "recordSet": "cr:recordSet",
    "references": "cr:references", "regex": "cr:regex", "repeated": "cr:repeated", "replace": "cr:replace",
    "sc": "https://schema.org/", "separator": "cr:separator", "source": "cr:source", "subField": "cr:subField",
    "transform": "cr:transform",
}
#: qrels.txt's columns as the Croissant record set `qrels` names them (ir_measures' names).
QRELS_FIELDS = (("query_id", "sc:Text", "the caption (query) id"),
                ("iteration", "sc:Text", "TREC's iteration column, always 0"),
                ("clip_id", "sc:Text", "the clip (document) id"),
                ("relevance", "sc:Integer", "1 relevant, 0 judged not relevant"))
_QRELS_FIELD_REGEX = tuple("^" + " ".join("(\\S+)" if i == position else "\\S+" for i in range(4)) + "$"
                           for position in range(4))
_SPDX = re.compile(r"^[A-Za-z0-9][A-Za-z0-9.+-]*$")


def _extension(path: str) -> str:
    return path[path.rfind("."):] if "." in path else ""


def scoring(meta: dict[str, Any]) -> dict[str, Any]:
    """How the release's runs were scored, in words (release.json's "scoring"; the datasheet's
    "How runs were scored"): the cut, Judged@K, unresolved pairs and the share resolved."""
    totals = meta["counts"].get("pool_pairs")
    resolved = isinstance(totals, dict) and totals.get("pooled")
    return {"runs_cut": run_cut_sentence(meta.get("leaderboard_params")), "judged_at_k": JUDGED_AT_K,
            "unresolved_pairs": unresolved_scoring(meta),
            "resolved_share": round(totals["resolved"] / totals["pooled"], 4) if resolved else None,
            "unresolved_allowed": bool(meta["counts"].get("unresolved_allowed"))}


def release_manifest(meta: dict[str, Any], files: list[dict]) -> str:
    keys = ("format", "name", "version", "slug", "title", "dataset", "created_at", "sources", "aggregation", "counts")
    document = {key: meta[key] for key in keys}
    document |= {"count_definitions": meta.get("count_definitions", {}), "scoring": scoring(meta),
                 "licence": meta.get("licence", ""), "authors": meta.get("authors", []), "files": files}
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"


def sha256sums(files: list[dict]) -> str:
    """`sha256sum -c` input: "<hex>  <path>" per file, paths relative to the release folder."""
    return "".join(f"{f['sha256']}  {f['path']}\n" for f in files)


def _authors(meta: dict) -> list[str]:
    return [a for a in meta.get("authors") or [] if a.strip()] or ["Rejudge contributors"]


def _figure(value, digits: int = 3) -> str:
    return "n/a" if value is None else (f"{value:.{digits}f}" if isinstance(value, float) else str(value))


def _source_line(source: dict) -> str:
    if source["kind"] == "pool":
        counts = source.get("pair_counts")
        return f"- pool `{source['name']}`: " + (pool_counts_phrase(counts) if counts else f"{source['pairs']} pairs")
    return f"- judgment set `{source['name']}`: {judgment_set_phrase(source)}"


def _judged_lines(meta: dict[str, Any]) -> list[str]:
    """What was judged: each source's counts, the pools' totals in words, the resolved share and,
    when pairs were left unresolved, that the admin allowed it and how they were scored."""
    counts = meta["counts"]
    lines = ["## What was judged", "", "Caption-clip pairs that the runs of these sources ranked highly:", ""]
    lines += [_source_line(s) for s in meta["sources"]]
    totals, words = counts.get("pool_pairs"), meta.get("count_definitions") or {}
    if isinstance(totals, dict):
        several = sum(s["kind"] == "pool" for s in meta["sources"]) > 1
        lines += ["", "In total over the pools:" if several else "In the pool:", ""]
        lines += [f"- {words.get(key, key.replace('_', ' '))}: {value}" for key, value in totals.items()]
        lines += ["", resolved_share_sentence(totals, made=True) + "."]
        if totals.get("unresolved"):
            lines += ["", "The release was made with unresolved pairs allowed by the admin. " + unresolved_scoring(meta)]
    lines += ["", f"- pairs in qrels.txt: {counts.get('qrels_pairs', 0)} ({counts.get('relevant', 0)} relevant, "
              f"{counts.get('not_relevant', 0)} not relevant), over {counts.get('queries', 0)} queries"]
    return lines


def _scoring_lines(meta: dict[str, Any]) -> list[str]:
    return ["## How runs were scored", "",
            f"- How runs were cut: {run_cut_sentence(meta.get('leaderboard_params'))}",
            f"- Judged@K: {JUDGED_AT_K}",
            f"- Unresolved and unjudged pairs: {unresolved_scoring(meta)}"]


def _signed_percent(value) -> str:
    return "n/a" if value is None else f"{100 * value:+.1f}"


def _percent(value) -> str:
    return "n/a" if value is None else f"{100 * value:.1f}"


def pool_bias_lines(meta: dict[str, Any]) -> list[str]:
    """The datasheet's pool-bias section: per run, each measure with and without the pairs only it
    contributed and the difference, in percent, and Judged@K of the leave-one-out run; or why the
    release has none (counts' `pool_bias_left_out`)."""
    lines = ["## Pool bias (leave one run out)", ""]
    bias = meta.get("pool_bias")
    if not bias or not bias.get("runs"):
        reason = meta["counts"].get("pool_bias_left_out") or "No pool-bias table in this release."
        return lines + [reason]
    measures, judged = bias["measures"], bias["judged_measures"]
    lines += [f"How much each run of the leaderboard (pool `{bias['pool']}`) owes to the pairs only it brought to "
              f"the pool: a model that was not pooled has no such pairs, so it loses about this much against "
              f"qrels.txt. Each cell is With / Without (Difference), in percent.", "",
              "| run | own pairs removed (relevant) | " + " | ".join(measures) + " | "
              + " | ".join(f"{j} without" for j in judged) + " |",
              "| --- | ---: | " + " | ".join("---:" for _ in measures + judged) + " |"]
    for row in bias["runs"]:
        cells = [f"{_percent(row['with'][m])} / {_percent(row['without'][m])} ({_signed_percent(row['difference'][m])})"
                 for m in measures]
        run = str(row["run"]).replace("|", "&#124;")  # a run name must not split the table's row
        lines.append(f"| {run} | {row['pairs_removed']} ({row['relevant_removed']}) | " + " | ".join(cells)
                     + " | " + " | ".join(_percent(row["judged_without"][j]) for j in judged) + " |")
    return lines + ["", bias["conventions"]]


def datasheet(meta: dict[str, Any], files: list[str]) -> str:
    counts, agreement = meta["counts"], meta.get("agreement") or {}
    lines = [
        f"# {meta['title'] or meta['slug']}", "",
        f"Release `{meta['slug']}` of corrected relevance judgments over the dataset `{meta['dataset']}`, "
        f"made with Rejudge on {meta['created_at'][:10]}.", "",
        *_judged_lines(meta), "", *_scoring_lines(meta), "", *pool_bias_lines(meta),
        "", "## Who judged", "",
        f"{counts.get('raters', 0)} raters gave {counts.get('labels', 0)} labels. Raters are named only by "
        f"pseudonyms local to this release (r001, r002...).", "",
        "## Guidelines", "", GUIDELINES, "",
        "## Aggregation", "", meta["aggregation"], "",
        "## Agreement", "",
    ]
    if agreement:
        for pool_name, figures in agreement.items():
            lines.append(f"- `{pool_name}`: Krippendorff's alpha {_figure(figures.get('alpha'))} and percent "
                         f"agreement {_figure(figures.get('percent_agreement'))} over "
                         f"{_figure(figures.get('multiply_labelled_pairs'))} pairs with two or more labels "
                         f"(first two votes of each pair; agreement.json has the rest)")
    else:
        lines.append("No pool with labels: no agreement figures.")
    lines += ["", "## Known limits", "", KNOWN_LIMITS, "",
              "## Files", "", "| file | content |", "| --- | --- |"]
    lines += [f"| `{path}` | {FILE_NOTES.get(path, 'benchmark format')} |" for path in files]
    lines += ["", "`SHA256SUMS` lists every file's SHA-256: `sha256sum -c SHA256SUMS` in this folder checks them.", "",
              "## Licence", "", meta.get("licence") or "Not stated: ask the authors before redistributing.", "",
              "## How to cite", "",
              f"{', '.join(_authors(meta))}. *{meta['title'] or meta['slug']}*, version {meta['version']} "
              f"(`{meta['slug']}`), {meta['created_at'][:4]}. See CITATION.cff.", ""]
    return "\n".join(lines)


def citation_cff(meta: dict[str, Any]) -> str:
    """CITATION.cff 1.2.0. Strings are written as JSON strings, which YAML reads as they are."""
    q = lambda text: json.dumps(str(text), ensure_ascii=False)  # noqa: E731
    lines = ["cff-version: 1.2.0", f"message: {q('If you use these judgments, please cite them as below.')}",
             f"title: {q(meta['title'] or meta['slug'])}", "type: dataset", "authors:"]
    lines += [f"  - name: {q(author)}" for author in _authors(meta)]
    lines += [f"version: {q(meta['slug'])}", f"date-released: {q(meta['created_at'][:10])}",
              f"abstract: {q('Corrected relevance judgments of ' + str(meta['dataset']) + '.')}"]
    licence = (meta.get("licence") or "").strip()
    if licence and _SPDX.match(licence):
        lines.append(f"license: {q(licence)}")
    if meta.get("archive_url"):
        lines.append(f"url: {q(meta['archive_url'])}")
    return "\n".join(lines) + "\n"


def croissant(meta: dict[str, Any], files: list[dict]) -> str:
    """Croissant 1.0: one FileObject per file, and record sets over labels.csv and qrels.txt."""
    distribution = [{"@type": "cr:FileObject", "@id": f["path"], "name": f["path"],
                     "description": FILE_NOTES.get(f["path"], "benchmark format"), "contentUrl": f["path"],
                     "encodingFormat": CONTENT_TYPES.get(_extension(f["path"]), "application/octet-stream"),
                     "contentSize": f"{f['bytes']} B", "sha256": f["sha256"]} for f in files]
    fields = [("query_id", "caption_id", "sc:Text", "the caption (query) id"),
              ("clip_id", "clip_id", "sc:Text", "the clip id"),
              ("rater", "rater", "sc:Text", "the rater's pseudonym within this release"),
              ("value", "value", "sc:Text", "the label given"),
              ("resolved_label", "resolved_label", "sc:Text", "the pair's resolved label")]
    record_sets = []
    if any(f["path"] == "labels.csv" for f in files):
        record_sets.append({
            "@type": "cr:RecordSet", "@id": "labels", "name": "labels", "description": "raw labels, one per row",
            "field": [{"@type": "cr:Field", "@id": f"labels/{name}", "name": name, "description": note,
                       "dataType": kind, "source": {"fileObject": {"@id": "labels.csv"}, "extract": {"column": column}}}
                      for name, column, kind, note in fields]})
    if any(f["path"] == "qrels.txt" for f in files):
        # qrels.txt has no header and splits on spaces (ids hold no whitespace): each line is read
        # whole (fileProperty lines) and each field is one regex group of it.
        record_sets.append({
            "@type": "cr:RecordSet", "@id": "qrels", "name": "qrels",
            "description": "the corrected judgments, one per line of qrels.txt (TREC qrels); a pair not listed has "
                           "no verdict and counts as not relevant",
            "field": [{"@type": "cr:Field", "@id": f"qrels/{name}", "name": name, "description": note, "dataType": kind,
                       "source": {"fileObject": {"@id": "qrels.txt"}, "extract": {"fileProperty": "lines"},
                                  "transform": {"regex": _QRELS_FIELD_REGEX[position]}}}
                      for position, (name, kind, note) in enumerate(QRELS_FIELDS)]})
    document = {
        "@context": CROISSANT_CONTEXT, "@type": "sc:Dataset", "name": meta["slug"].replace("@", "-"),
        "description": f"{meta['title'] or meta['slug']}: corrected relevance judgments of caption-clip pairs of "
                       f"the dataset {meta['dataset']} ({meta['aggregation']}). {unresolved_scoring(meta)} "
                       f"Runs in the leaderboard: {run_cut_sentence(meta.get('leaderboard_params'))} {JUDGED_AT_K}",
        "conformsTo": "http://mlcommons.org/croissant/1.0", "version": f"{meta['version']}.0.0",
        "datePublished": meta["created_at"][:10], "license": meta.get("licence") or "unknown",
        "url": meta.get("archive_url") or f"https://example.invalid/releases/{meta['slug']}",
        "citeAs": f"{', '.join(_authors(meta))}. {meta['title'] or meta['slug']} ({meta['slug']}).",
        "creator": [{"@type": "sc:Person", "name": author} for author in _authors(meta)],
        "distribution": distribution, "recordSet": record_sets,
    }
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"
