from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from annotation.formats.errors import ImportRejected
from annotation.models.judgment_sets import JudgmentSet
from annotation.services.machine_judges.errors import MachineJudgeError
from annotation.services.machine_judges.imports import machine_judge_import
from annotation.services.machine_judges.operations import MACHINE_JUDGMENTS_IMPORT

from ._declared import add_declared_arguments, declared_clean, declared_given
from ._progress import rejected_to_command_error
from .report import pool_from_option


class Command(BaseCommand):
    help = ("Import an automatic assessor's judgments (a language or vision-language model) as a machine judge of a "
            "pool or of a judgment set. CSV with a header or JSON Lines with query, item, label[, score, model, "
            "prompt]. Machine verdicts never count as human labels; `report --kind machine_judge` measures them "
            "against people. All or nothing.")

    def add_arguments(self, parser):
        parser.add_argument("path", type=Path)
        target = parser.add_mutually_exclusive_group(required=True)
        target.add_argument("--pool", help="Pool id, or its name if unique: the judge judges the pool's pairs.")
        target.add_argument("--judgment-set", type=int, metavar="ID",
                            help="Judgment set id: the judge judges the pairs the set has verdicts on.")
        # The upload endpoint's fields, from the import job's declarations.
        add_declared_arguments(parser, MACHINE_JUDGMENTS_IMPORT.params)

    def handle(self, *args, **opts):
        path: Path = opts["path"]
        if not path.is_file():
            raise CommandError(f"{path}: no such file")
        pool = judgment_set = None
        if opts["pool"]:
            pool = pool_from_option(opts["pool"])
            dataset = pool.dataset
        else:
            judgment_set = JudgmentSet.objects.select_related("dataset").filter(pk=opts["judgment_set"]).first()
            if judgment_set is None:
                raise CommandError(f"no judgment set with id {opts['judgment_set']}")
            dataset = judgment_set.dataset
        chosen = declared_clean(MACHINE_JUDGMENTS_IMPORT.params, declared_given(opts, MACHINE_JUDGMENTS_IMPORT.params),
                                owner="import_machine_judgments")
        try:
            judge = machine_judge_import(dataset=dataset, path=path, name=chosen["name"] or path.name, pool=pool,
                                         judgment_set=judgment_set, file_format=chosen["file_format"] or None,
                                         model_name=chosen["model"], prompt_version=chosen["prompt"])
        except ImportRejected as exc:
            raise rejected_to_command_error(exc) from exc
        except MachineJudgeError as exc:
            raise CommandError(str(exc)) from exc
        counts = judge.counts
        self.stdout.write(self.style.SUCCESS(
            f"imported machine judge '{judge.name}' (id {judge.pk}, model {judge.model_name or '?'}): "
            f"{counts['relevant']} relevant, {counts['not_relevant']} not relevant"))
