from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from annotation.selectors.pools import pool_progress
from annotation.demo.load import demo_load


class Command(BaseCommand):
    help = ("Load the demo benchmark (12 synthetic clips, 20 captions, 3 runs), a pool with training and gold pairs, a "
            "ranking study, and demo accounts. Safe to run twice.")

    def add_arguments(self, parser):
        parser.add_argument("--force", action="store_true",
                            help="Load the demo even with DEBUG off (its accounts have published passwords).")

    def handle(self, *args, **opts):
        # The demo accounts' passwords are printed here and in the README: on a real deployment
        # (DEBUG off) they would be open doors.
        if not settings.DEBUG and not opts["force"]:
            raise CommandError("DEBUG is off, so this looks like a production deployment, and the demo creates accounts "
                               "with published passwords (an admin among them). Run it with DEBUG=1 on a development "
                               "machine, or pass --force if you really want the demo data here.")
        summary = demo_load()
        dataset = summary["dataset"]
        self.stdout.write(self.style.SUCCESS(
            f"demo dataset '{dataset.name}': {dataset.clips.count()} clips, {dataset.captions.count()} captions, "
            f"runs: {', '.join(r.name for r in summary['runs'])}"))
        pool, study = summary["pool"], summary["study"]
        # Pairs still to judge, not the pool's size: a second run finds some already decided.
        progress = pool_progress(pool=pool)
        self.stdout.write(f"pool '{pool.name}' (id {pool.pk}): {progress['left']} of {progress['pairs']} pairs left to judge, "
                          f"{pool.pairs.filter(role='training').count()} training pairs first; "
                          f"ranking study '{study.name}' (id {study.pk})")
        self.stdout.write(f"report '{summary['report'].title}' (id {summary['report'].pk}) and export "
                          f"'{summary['export'].name}' (id {summary['export'].pk}) are on the reports page, /reports/")
        self.stdout.write("accounts (demo only, change them anywhere else):")
        for account in summary["accounts"]:
            extra = f"  API token {account['api_token']}" if "api_token" in account else ""
            self.stdout.write(f"  {account['role']:<10} {account['username']:<11} password {account['password']}{extra}")
