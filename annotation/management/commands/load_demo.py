from django.core.management.base import BaseCommand

from annotation.services.demo import demo_load


class Command(BaseCommand):
    help = ("Load the demo benchmark (12 synthetic clips, 20 captions, 3 runs), a pool with training and gold pairs, a "
            "ranking study, and demo accounts. Safe to run twice.")

    def handle(self, *args, **opts):
        summary = demo_load()
        dataset = summary["dataset"]
        self.stdout.write(self.style.SUCCESS(
            f"demo dataset '{dataset.name}': {dataset.clips.count()} clips, {dataset.captions.count()} captions, "
            f"runs: {', '.join(r.name for r in summary['runs'])}"))
        pool, study = summary["pool"], summary["study"]
        self.stdout.write(f"pool '{pool.name}' (id {pool.pk}): {pool.pairs.filter(role='pool').count()} pairs to judge, "
                          f"3 training pairs first; ranking study '{study.name}' (id {study.pk})")
        self.stdout.write("accounts (demo only, change them anywhere else):")
        for account in summary["accounts"]:
            extra = f"  API token {account['api_token']}" if "api_token" in account else ""
            self.stdout.write(f"  {account['role']:<10} {account['username']:<11} password {account['password']}{extra}")
