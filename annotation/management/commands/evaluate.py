from __future__ import annotations

from pathlib import Path

from django.core.management.base import CommandError

from annotation.formats.errors import ImportRejected
from annotation.formats.text_lines import file_checksum
from annotation.services.evaluation.errors import EvaluationError
from annotation.services.evaluation.evaluate import evaluate

from ._declared import declared_clean, declared_given
from ._evaluate_files import DECLARED, add_evaluate_arguments, evaluate_files, files_only
from ._offline import OfflineCommand
from ._progress import rejected_to_command_error


class Command(OfflineCommand):
    help = ("Score run files against a judgments file as the official tools do (trec_eval for TREC qrels, "
            "NIST's sample_eval.pl for TRECVID stratified qrels, Moment-DETR's and TVRetrieval's "
            "standalone_eval for QVHighlights and TVR moments). Judgments come from a file (--judgments, "
            "--judgments-format), a stored set (--dataset, --judgment-set) or a stored release's qrels.txt (--release); "
            "runs from files or, with a stored "
            "set, stored runs (--run). Nothing is stored unless --store. The table and JSON layouts give each "
            "measure cut at K the run's Judged@K and flag it when below --judged-threshold.")

    #: Options declared once elsewhere (the threshold is the leaderboard's and the client's too).
    DECLARED = DECLARED

    def add_arguments(self, parser):
        add_evaluate_arguments(parser)

    def files_only(self, options) -> bool:
        return files_only(options)

    def handle(self, *args, **opts):
        if opts["release"]:
            return self._against_release(opts)
        judgment_set = None
        if not self.files_only(opts):
            # Imported here: a file-only evaluation runs before django.setup() (see
            # _offline.run_without_setup), when no model can be imported yet.
            from ._judgment_sets import stored_judgment_set

            judgment_set = stored_judgment_set(opts)
        if judgment_set is None:
            for flag in ("stored_runs", "with_originals", "store"):
                if opts[flag]:
                    raise CommandError(f"--{flag.replace('stored_runs', 'run').replace('_', '-')} needs a stored set: "
                                       f"--dataset D --judgment-set NAME")
            if not opts["judgments_format"]:
                raise CommandError("--judgments-format is required with --judgments")
        elif opts["judgments_format"] or opts["columns"]:
            raise CommandError("a stored set is read as it was imported: drop --judgments-format and --columns")
        if not opts["runs"] and not opts["stored_runs"]:
            raise CommandError("name at least one run: a file, or --run NAME for a stored run")
        for path in [*([opts["judgments"]] if judgment_set is None else []), *opts["runs"]]:
            if not path.is_file():
                raise CommandError(f"{path}: no such file")
        options = {k: opts[k] for k in ("queries", "originals", "columns", "repeats", "aggregate")}
        threshold = declared_clean(self.DECLARED, declared_given(opts, self.DECLARED))["judged_threshold"]
        try:
            if judgment_set is None:
                result = evaluate_files(opts, threshold)
            else:
                # Imported here: reports pull in SciPy, which a file-only evaluation never needs.
                from annotation.services.judgment_sets.scoring import evaluation_report_store, judgment_set_evaluate

                runs = self._stored_runs(judgment_set, opts["stored_runs"])
                result = judgment_set_evaluate(judgment_set=judgment_set, run_paths=opts["runs"], runs=runs,
                                               conventions=opts["conventions"], measures=opts["measures"],
                                               run_format=opts["run_format"], output=opts["output"],
                                               with_originals=opts["with_originals"], judgments_options=options
                                               ).with_judged_threshold(threshold)
                if opts["store"]:
                    report = evaluation_report_store(evaluation=result, judgment_set=judgment_set, params={
                        "judgment_set_id": judgment_set.pk, "conventions": result.conventions.name,
                        "measures": opts["measures"], "with_originals": opts["with_originals"],
                        "runs": [{"id": r.pk, "name": r.name, "checksum": r.checksum} for r in runs]
                        + [{"file": p.name, "checksum": file_checksum(p)} for p in opts["runs"]]})
                    self.stderr.write(f"stored as report {report.pk}")
        except ImportRejected as exc:
            raise rejected_to_command_error(exc) from exc
        except EvaluationError as exc:
            raise CommandError(str(exc)) from exc
        result.write(opts["output"], self.stdout)

    def _against_release(self, opts) -> None:
        # Imported here: it reads the database and the storage (see handle).
        import tempfile

        from annotation.services.evaluation.release_qrels import release_qrels_write

        for flag in ("judgments", "judgments_format", "dataset", "judgment_set", "stored_runs", "store",
                     "with_originals", "queries", "columns", "repeats", "aggregate"):
            if opts[flag]:
                raise CommandError(f"--release scores run files against the release's qrels.txt: drop "
                                   f"--{flag.replace('stored_runs', 'run').replace('_', '-')}")
        if not opts["runs"]:
            raise CommandError("name at least one run file")
        for path in opts["runs"]:
            if not path.is_file():
                raise CommandError(f"{path}: no such file")
        threshold = declared_clean(self.DECLARED, declared_given(opts, self.DECLARED))["judged_threshold"]
        try:
            with tempfile.TemporaryDirectory(prefix="rejudge-evaluate-") as folder:
                qrels = release_qrels_write(slug=opts["release"], folder=Path(folder))
                result = evaluate(opts["runs"], qrels, "qrels", conventions=opts["conventions"],
                                  measures=opts["measures"], run_format=opts["run_format"], output=opts["output"],
                                  judgments_options={"originals": opts["originals"]}, judged_threshold=threshold)
        except ImportRejected as exc:
            raise rejected_to_command_error(exc) from exc
        except EvaluationError as exc:
            raise CommandError(str(exc)) from exc
        result.write(opts["output"], self.stdout)

    @staticmethod
    def _stored_runs(judgment_set, names: list[str]) -> list:
        from annotation.models import Run  # see handle: not imported before django.setup()

        runs = []
        for name in names:
            run = Run.objects.filter(dataset_id=judgment_set.dataset_id, name=name).first()
            if run is None:
                known = ", ".join(Run.objects.filter(dataset_id=judgment_set.dataset_id)
                                  .values_list("name", flat=True)[:20]) or "none"
                raise CommandError(f"no run '{name}' in '{judgment_set.dataset.name}' (runs: {known})")
            runs.append(run)
        return runs
