from django.core.management.base import BaseCommand, CommandError

from annotation.models import JudgeEndpoint
from annotation.models.judgment_sets import JudgmentSet
from annotation.services.machine_judges.operations import machine_judge_run_here
from annotation.services.machine_judges.runner.run import JudgeRunError

from ._progress import ConsoleProgress
from .report import pool_from_option


class Command(BaseCommand):
    help = ("Run a registered machine judge (`machine_judge add`) over a pool's pairs or a judgment set's pairs, in "
            "this process, as a job (shown on the jobs page). Frames are cut with ffmpeg and sent to the judge's "
            "OpenAI-compatible server; answers already cached for the same model, prompt version, pair and frame "
            "sampling are not sent again. The key is read from the environment variable the judge names.")

    def add_arguments(self, parser):
        target = parser.add_mutually_exclusive_group(required=True)
        target.add_argument("--pool", help="Pool id, or its name if unique.")
        target.add_argument("--judgment-set", type=int, metavar="ID", help="Judgment set id.")
        parser.add_argument("--judge", required=True, help="Name (or id) of the registered judge.")

    def handle(self, *args, **opts):
        value = opts["judge"]
        endpoint = (JudgeEndpoint.objects.filter(pk=int(value)).first() if value.isdigit() else None) \
            or JudgeEndpoint.objects.filter(name=value).first()
        if endpoint is None:
            raise CommandError(f"no registered judge '{value}' (see `manage.py machine_judge list`)")
        pool = judgment_set = None
        if opts["pool"]:
            pool = pool_from_option(opts["pool"])
        else:
            judgment_set = JudgmentSet.objects.filter(pk=opts["judgment_set"]).first()
            if judgment_set is None:
                raise CommandError(f"no judgment set with id {opts['judgment_set']}")
        try:
            job = machine_judge_run_here(endpoint=endpoint, pool=pool, judgment_set=judgment_set,
                                         progress=ConsoleProgress(f"judge {endpoint.name}"))
        except JudgeRunError as exc:
            raise CommandError(str(exc)) from exc
        if job.status != job.Status.SUCCEEDED:
            raise CommandError(f"job {job.pk} failed: {job.message}")
        r = job.result
        stopped = f"; stopped: {r['stopped']}" if r.get("stopped") else ""
        self.stdout.write(self.style.SUCCESS(
            f"machine judge '{r['name']}' (id {r['judge_id']}, job {job.pk}): {r['judged']} of {r['pairs']} pairs judged "
            f"({r['cached']} from the cache), {r['relevant']} relevant, {r['errors']} errors, {r['requests']} requests, "
            f"{r['tokens']} tokens{stopped}"))
        for error in r.get("errors_listed", [])[:10]:
            self.stdout.write(f"  {error['caption']} / {error['clip']}: {error['error']}")
