"""The `evaluation` report kind: stored runs scored against a judgment set under a tool's
conventions. Created by annotation.services.judgment_sets.scoring (its options are the evaluate
command's) through the `evaluate_judgment_set` operation (services/judgment_sets/operations.py),
whose parameters are the ones declared here; this module lays the stored result out as tables."""
from __future__ import annotations

from annotation.analysis.params import REQUIRED, Param
from annotation.services.evaluation.conventions import CONVENTIONS
from annotation.services.reports.kind import ReportKind
from annotation.services.reports.tables import ReportTable, keys_in_order, natural_key

#: What a caller chooses: the stored runs, the tool's conventions and the measures.
PARAMS = {
    "run_ids": Param(list, REQUIRED, "ids of stored runs of the set's dataset, scored in this order", 1, None,
                     unique_sorted=False, max_items=50),
    "conventions": Param(str, None, "the tool whose rules score the runs (null: the set's format's own tool: trec "
                         "for qrels and pool sets, trecvid for sample_eval)", choices=tuple(CONVENTIONS),
                         nullable=True, what="conventions"),
    "measures": Param(list, None, "trec_eval / ir_measures names, or sample_eval's (null or empty: the format's "
                      "default set)", items=str, unique_sorted=False, min_items=0, max_items=50, max_length=50,
                      nullable=True),
}


def evaluation_tables(result: dict) -> list[ReportTable]:
    judged, runs = result["judgment_set"], result["runs"]
    if not runs:
        return []
    # One evaluate call scores every run under the same conventions, so the first run's stand for all.
    conventions = runs[0]["conventions"]
    tool = f"{conventions['name']} conventions ({conventions['tool']})"
    measures = keys_in_order(r["measures"] for r in runs)
    tables = [
        ReportTable("runs", f"Scores against '{judged['name']}' ({judged['format']}), {tool}",
                    ["run", *measures, "queries_scored", "queries_unanswered", "queries_without_judgments"],
                    [[r["run"], *(r["measures"].get(m) for m in measures), r["queries"]["scored"],
                      len(r["queries"]["unanswered"]), len(r["queries"]["without_judgments"])] for r in runs]),
        ReportTable("conventions", f"Conventions: {tool}", ["rule", "value"],
                    [[key.replace("_", " "), "none" if value is None else value]
                     for key, value in conventions.items()
                     # rules is the whole rule text of tools the other fields do not describe
                     if key not in ("name", "tool") and not (key == "rules" and value is None)]),
    ]
    with_fire = [r for r in runs if r.get("fire")]
    if with_fire:
        fire_measures = keys_in_order(r["fire"] for r in with_fire)
        tables += [
            ReportTable("fire", f"FIRE layout: A (B + C) = all the set's positives (the original positives only + "
                                f"gain), in percent, {tool}",
                        ["run", *fire_measures],
                        [[r["run"], *(r["fire"].get(m, {}).get("text") for m in fire_measures)] for r in with_fire]),
            ReportTable("fire_values", "FIRE A, B and C in percent (unrounded)", ["run", "measure", "a", "b", "c"],
                        [[r["run"], m, r["fire"][m]["A"], r["fire"][m]["B"], r["fire"][m]["C"]] for r in with_fire
                         for m in fire_measures if m in r["fire"]]),
        ]
    per_query = keys_in_order(values for r in runs for values in r["per_query"].values())
    tables.append(ReportTable("per_query", f"Per query, {tool}", ["run", "query", *per_query],
                              [[r["run"], query, *(r["per_query"][query].get(m) for m in per_query)]
                               for r in runs for query in sorted(r["per_query"], key=natural_key)]))
    return tables


KIND = ReportKind(name="evaluation", title="Evaluation against a judgment set", params=PARAMS,
                  tables=evaluation_tables)
