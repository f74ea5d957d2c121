from django.core.management.base import BaseCommand, CommandError

from annotation.models import Dataset
from annotation.services.media.check import dataset_media_check

from ._media import media_problem_lines, media_summary_lines
from ._progress import ConsoleProgress


class Command(BaseCommand):
    help = ("Check every clip's media of a dataset with ffmpeg: the file exists and reads, its container and "
            "codecs play in browsers (MP4/WebM; H.264, VP9 or AV1; AAC, Opus or no audio), an MP4's index is "
            "at the front, and each clip's span lies inside the video. Prints the problems with a fix each; "
            "exits 1 when a clip failed.")

    def add_arguments(self, parser):
        parser.add_argument("--dataset", required=True, help="the dataset's name or id")

    def handle(self, *args, **opts):
        dataset = dataset_named(opts["dataset"])
        # In this process, as import_dataset imports (the page and the API queue it as a job).
        summary = dataset_media_check(dataset, progress=ConsoleProgress("checking media"))
        self.stdout.write("\n".join(media_summary_lines(summary) + media_problem_lines(dataset)))
        if summary["failed"]:
            raise CommandError(f"{summary['failed']} clips failed the media check", returncode=1)


def dataset_named(text: str) -> Dataset:
    found = Dataset.objects.filter(name=text).first()
    if found is None and text.isdigit():
        found = Dataset.objects.filter(pk=int(text)).first()
    if found is None:
        raise CommandError(f"no dataset named '{text}'")
    return found
