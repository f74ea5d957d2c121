import json

from django.core.management.base import BaseCommand, CommandError

from annotation.formats.csv_safe import safe_csv_writer
from annotation.models import Pool
from annotation.models.judgment_sets import JudgmentSet
from annotation.services.machine_judges.errors import MachineJudgeError
from annotation.services.machine_judges.lookup import judgment_set_machine_judge
from annotation.services.machine_judges.reports import machine_judge_report_create
from annotation.services.reports.create import ReportError, report_create
from annotation.services.reports.registry import POOL_REPORT_KINDS, report_tables

from ._progress import ConsoleProgress


def pool_from_option(value: str) -> Pool:
    """A pool by id, or by name when that name is unique."""
    pools = Pool.objects.filter(pk=int(value)) if value.isdigit() else Pool.objects.filter(name=value)
    found = list(pools.select_related("dataset")[:2])
    if not found:
        raise CommandError(f"no pool '{value}'")
    if len(found) > 1:
        raise CommandError(f"several pools are named '{value}'; give the pool id")
    return found[0]


def params_from_options(items: list[str]) -> dict:
    """key=value pairs; values are read as JSON (numbers, lists, true/false/null), else as text."""
    params = {}
    for item in items:
        key, sep, raw = item.partition("=")
        if not sep or not key:
            raise CommandError(f"--param expects key=value, got '{item}'")
        try:
            params[key] = json.loads(raw)
        except json.JSONDecodeError:
            params[key] = raw
    return params


class Command(BaseCommand):
    help = ("Compute and store a report of a pool (agreement, metrics, sample_estimate, machine_judge, ...), or with "
            "--judgment-set the machine_judge report of a judgment set's machine judge, then print its tables, its "
            "JSON (--json) or one table as CSV (--csv TABLE).")

    def add_arguments(self, parser):
        target = parser.add_mutually_exclusive_group(required=True)
        target.add_argument("--pool", help="Pool id, or its name if unique.")
        target.add_argument("--judgment-set", type=int, metavar="ID",
                            help="With --kind machine_judge: a judge of this judgment set (--param judge=ID unless the "
                                 "set has one) measured against the set's verdicts.")
        parser.add_argument("--kind", required=True, choices=POOL_REPORT_KINDS)
        parser.add_argument("--param", action="append", default=[], metavar="KEY=VALUE",
                            help="A report parameter, e.g. --param n_boot=2000 --param ks=[1,5,10]. Repeatable.")
        output = parser.add_mutually_exclusive_group()
        output.add_argument("--json", action="store_true", help="Print the stored report (result, params, versions) as JSON.")
        output.add_argument("--csv", metavar="TABLE", help="Print one table of the report as CSV.")

    def handle(self, *args, **opts):
        params = params_from_options(opts["param"])
        progress = ConsoleProgress(f"{opts['kind']} report")
        try:
            if opts["judgment_set"] is not None:
                report = self._judgment_set_report(opts["judgment_set"], opts["kind"], params, progress)
            else:
                report = report_create(pool=pool_from_option(opts["pool"]), kind=opts["kind"], params=params,
                                       progress=progress)
        except ReportError as exc:
            raise CommandError(str(exc)) from exc
        tables = report_tables(report=report)
        if opts["json"]:
            json.dump({"id": report.pk, "kind": report.kind, "pool": report.pool_id,
                       "judgment_set": report.params.get("judgment_set_id"), "params": report.params,
                       "versions": report.versions, "result": report.result}, self.stdout, indent=1)
            self.stdout.write("")
            return
        if opts["csv"]:
            table = next((t for t in tables if t.name == opts["csv"]), None)
            if table is None:
                raise CommandError(f"no table '{opts['csv']}'; tables: {', '.join(t.name for t in tables)}")
            writer = safe_csv_writer(self.stdout)
            writer.writeheader(table.columns)
            writer.writerows(table.rows)
            return
        for table in tables:
            self.stdout.write(f"\n{table.title}  [{table.name}]")
            self.stdout.write("\t".join(table.columns))
            for row in table.rows:
                self.stdout.write("\t".join("" if v is None else (f"{v:.4f}" if isinstance(v, float) else str(v))
                                            for v in row))
        self.stdout.write(self.style.SUCCESS(f"\nstored as report {report.pk} ({report.title})"))

    @staticmethod
    def _judgment_set_report(judgment_set_id: int, kind: str, params: dict, progress):
        if kind != "machine_judge":
            raise CommandError(f"--judgment-set takes --kind machine_judge; a {kind} report is a pool's (--pool)")
        judgment_set = JudgmentSet.objects.filter(pk=judgment_set_id).first()
        if judgment_set is None:
            raise CommandError(f"no judgment set with id {judgment_set_id}")
        try:
            judge = judgment_set_machine_judge(judgment_set=judgment_set, judge_id=params.pop("judge", None))
            return machine_judge_report_create(judge=judge, params=params, progress=progress)
        except MachineJudgeError as exc:
            raise CommandError(str(exc)) from exc
