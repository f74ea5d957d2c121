import json
from pathlib import Path

from django.core.management.base import CommandError

from annotation.formats.errors import ImportRejected
from annotation.formats.rater_labels import FILE_FORMATS, parse_columns
from annotation.services.judgment_sets.agreement import AGREEMENT_FORMATS, AgreementOptionsError, agreement_file_compute
from annotation.services.judgment_sets.operations import AGREEMENT
from annotation.services.judgment_sets.scoring import agreement_report_store, judgment_set_agreement

from ._declared import add_declared_arguments, declared_clean, declared_given
from ._judgment_sets import stored_judgment_set
from ._offline import OfflineCommand
from ._progress import ConsoleProgress


def _refusal(exc: ImportRejected) -> str:
    lines = [str(issue) for issue in exc.issues]
    if exc.truncated:
        lines.append(f"... stopped after {len(exc.issues)} problems")
    return "file refused, no figure computed:\n  " + "\n  ".join(lines)


def _figure(value) -> str:
    return "n/a" if value is None else f"{value:.4f}"


def _interval(pair) -> str:
    return "" if not pair or pair[0] is None else f"[{pair[0]:.4f}, {pair[1]:.4f}]"


class Command(OfflineCommand):
    help = ("Inter-rater agreement of a multi-rater label file, as a pool's agreement report computes it: percent "
            "agreement, Krippendorff's alpha with a bootstrap interval, per rater. One rater's repeated labels of "
            "a unit are resolved by --repeats and counted. Reads a file (--judgments), or a stored rater_labels "
            "set (--dataset and --judgment-set); --store keeps the result of a stored set as a report.")

    def add_arguments(self, parser):
        parser.add_argument("--judgments", type=Path, metavar="FILE", help="The label file.")
        parser.add_argument("--dataset", help="With --judgment-set: a stored rater_labels set of this dataset.")
        parser.add_argument("--judgment-set", metavar="NAME", help="A stored set, read with the options it was "
                                                                   "imported with (columns, repeat rule).")
        parser.add_argument("--store", action="store_true", help="Keep the result of a stored set as a report.")
        parser.add_argument("--judgments-format", choices=AGREEMENT_FORMATS,
                            help="rater_labels: CSV or JSON Lines, one row per label, columns query,item,rater,"
                                 "value[,time] (or unit instead of query,item).")
        parser.add_argument("--columns", default="", metavar="NAME=COLUMN,...",
                            help="Map the file's columns, e.g. unit=pair_id,rater=worker,value=relevance. "
                                 "Names: query, item, unit, rater, value, time.")
        parser.add_argument("--file-format", choices=FILE_FORMATS,
                            help="Default: jsonl for .jsonl/.ndjson files or a file starting with '{', else csv.")
        # --level, --binarize-at, --repeats: as the agreement job of a stored set declares them (a
        # file's repeat rule defaults to last: by the time column when there is one, else file order).
        add_declared_arguments(parser, AGREEMENT.params)
        parser.add_argument("--n-boot", type=int, default=1000, help="Bootstrap replicates (default 1000; 0: none).")
        parser.add_argument("--seed", type=int, default=0)
        parser.add_argument("--confidence", type=float, default=0.95)
        parser.add_argument("--json", action="store_true", help="Print the result as JSON.")

    def handle(self, *args, **opts):
        stored = stored_judgment_set(opts)
        if stored is None and opts["store"]:
            raise CommandError("--store keeps the result of a stored set: use --dataset and --judgment-set")
        if stored is None:
            path: Path = opts["judgments"]
            if not opts["judgments_format"]:
                raise CommandError("--judgments-format is required with --judgments")
            if not path.is_file():
                raise CommandError(f"{path}: no such file")
        elif opts["judgments_format"] or opts["columns"] or opts["file_format"]:
            raise CommandError("a stored set is read as it was imported: drop --judgments-format, --columns and "
                               "--file-format")
        chosen = declared_clean(AGREEMENT.params, declared_given(opts, AGREEMENT.params), owner="agreement")
        try:
            common = dict(level=chosen["level"], binarize_at=chosen["binarize_at"], n_boot=opts["n_boot"],
                          seed=opts["seed"], confidence=opts["confidence"])
            if stored is None:
                result = agreement_file_compute(
                    path=path, judgments_format=opts["judgments_format"], columns=parse_columns(opts["columns"]),
                    file_format=opts["file_format"], repeats=chosen["repeats"] or "last",
                    progress=ConsoleProgress(f"reading {path.name}"), **common)
            else:
                result = judgment_set_agreement(judgment_set=stored, repeats=chosen["repeats"],
                                                progress=ConsoleProgress(f"reading {stored.name}"), **common)
                if opts["store"]:
                    report = agreement_report_store(result=result, judgment_set=stored, params={
                        "level": chosen["level"], "binarize_at": chosen["binarize_at"], "repeats": result["repeats"],
                        "n_boot": opts["n_boot"], "seed": opts["seed"], "confidence": opts["confidence"]})
                    self.stderr.write(f"stored as report {report.pk}")
        except ImportRejected as exc:
            raise CommandError(_refusal(exc)) from exc
        except (AgreementOptionsError, ValueError) as exc:
            raise CommandError(str(exc)) from exc
        if opts["json"]:
            self.stdout.write(json.dumps(result, indent=1))
            return
        self._table(result)

    def _table(self, r: dict) -> None:
        out = self.stdout.write
        binarized = f", binarized at {r['binarize_at']:g}" if r["binarize_at"] is not None else ""
        out(f"{r['file']} ({r['judgments_format']}): {r['labels']:,} labels, {r['units']:,} units "
            f"({r['units_multiply_labelled']:,} with two or more labels), {r['raters']:,} raters; values: {r['values']}")
        out(f"repeats: {r['repeated_cells']:,} (unit, rater) cells labelled more than once, "
            f"{r['repeated_cells_identical']:,} of them identically; rule '{r['repeats']}' "
            f"(ordered by {r['repeats_ordered_by']}) set aside {r['labels_set_aside']:,} labels")
        ci = f"{r['confidence'] * 100:g}% bootstrap interval, {r['n_boot']} replicates, seed {r['seed']}"
        out(f"\nagreement ({r['level']}{binarized}; {r['labels_used']:,} labels used, {ci})")
        out(f"percent agreement, one label per rater ('{r['repeats']}'): units whose raters all agree\t"
            f"{_figure(r['percent_agreement'])}\t{_interval(r['percent_agreement_ci'])}")
        out(f"percent agreement, every label counted (repeats included): units whose labels all agree\t"
            f"{_figure(r['percent_agreement_every_label'])}")
        out(f"Krippendorff's alpha\t{_figure(r['alpha'])}\t{_interval(r['alpha_ci'])}")
        out("\nper rater (agreement with the strict-majority label, on units with two or more labels that resolved)")
        out("rater\tlabels\tused\trepeated_cells\tcompared\tagreement_with_resolved")
        for row in r["per_rater"]:
            out(f"{row['rater']}\t{row['labels']}\t{row['labels_used']}\t{row['repeated_cells']}\t{row['compared']}\t"
                f"{_figure(row['agreement_with_resolved'])}")
