from django.core.management.base import BaseCommand, CommandError

from annotation.services.media.operations import MEDIA_PREPARE
from annotation.services.media.prepare import PrepareError, dataset_media_prepare

from ._declared import add_declared_arguments, declared_clean, declared_given
from ._media import media_problem_lines, media_summary_lines
from ._progress import ConsoleProgress
from .check_media import dataset_named


class Command(BaseCommand):
    help = ("Make copies browsers play of a dataset's clips that failed the media check for their container, "
            "codecs or index (H.264 MP4, index at the front), optionally cut to each clip's span (--cut, "
            "--margin) and scaled (--height 480), into the media storage; each clip then plays its copy and "
            "keeps its original reference. Resumable: clips already prepared are skipped. Checks them again.")

    def add_arguments(self, parser):
        parser.add_argument("--dataset", required=True, help="the dataset's name or id")
        add_declared_arguments(parser, MEDIA_PREPARE.params)

    def handle(self, *args, **opts):
        dataset = dataset_named(opts["dataset"])
        chosen = declared_clean(MEDIA_PREPARE.params, declared_given(opts, MEDIA_PREPARE.params), owner="prepare_media")
        try:
            done = dataset_media_prepare(dataset, cut=chosen["cut"], margin=chosen["margin"], height=chosen["height"],
                                         progress=ConsoleProgress("preparing media"))
        except PrepareError as exc:
            raise CommandError(str(exc)) from exc
        lines = [f"prepared {done['prepared']:,} clips ({done['copies']:,} copies); {done['already_prepared']:,} "
                 f"were prepared before; {done['not_preparable']:,} have problems a copy does not fix"]
        lines += [f"  could not convert {', '.join(f['clip_ids'])}: {f['error']}" for f in done["failed"]]
        self.stdout.write("\n".join(lines + media_summary_lines(done["check"]) + media_problem_lines(dataset)))
        if done["failed"]:
            raise CommandError(f"{len(done['failed'])} copies could not be made", returncode=1)
