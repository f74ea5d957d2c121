import json

from django.core.management.base import CommandError

from annotation.models import Dataset
from annotation.services.proxies.matrices import (MATRIX_PROXIES, RANDOM_BASELINE_PARAMS, ProxyError,
                                                  proxy_random_baseline_table)
from annotation.services.reports.kinds.proxy_ndcg import PARAMS as NDCG_PARAMS

from ._declared import add_declared_arguments, declared_clean, declared_given
from ._offline import OfflineCommand

# The baseline's draws and seed as the API and the page take them (matrices.RANDOM_BASELINE_PARAMS);
# it is scored as a run's proxy nDCG is: gain and the empty-query rule are the report's declared
# parameters (services/reports/kinds/proxy_ndcg.py).
OPTIONS = RANDOM_BASELINE_PARAMS | {name: NDCG_PARAMS[name] for name in ("gain", "empty")}


class Command(OfflineCommand):
    help = ("The nDCG of random rankings against a dataset's semantic-proxy matrices: the baseline row of Wray "
            "et al.'s tables, as seeded draws (mean, standard deviation, range) with the exact expectation over "
            "all rankings beside them. Uses the newest stored matrix of each proxy (compute_proxies makes them); "
            "nothing is stored. A run's own proxy nDCG is a report: POST runs/{id}/proxy-ndcg/ or the proxies page.")

    def add_arguments(self, parser):
        parser.add_argument("--dataset", required=True, help="Name of the dataset.")
        parser.add_argument("--random-baseline", action="store_true", required=True,
                            help="Score random rankings (the only mode of this command for now).")
        parser.add_argument("--proxy", nargs="+", choices=MATRIX_PROXIES, default=None,
                            help="Which proxies (default: every proxy with a stored matrix).")
        add_declared_arguments(parser, OPTIONS)
        parser.add_argument("--json", action="store_true", help="Print JSON instead of a table.")

    def handle(self, *args, **opts):
        dataset = Dataset.objects.filter(name=opts["dataset"]).first()
        if dataset is None:
            raise CommandError(f"no dataset named '{opts['dataset']}'")
        chosen = declared_clean(OPTIONS, declared_given(opts, OPTIONS))
        opts |= chosen
        try:
            table = proxy_random_baseline_table(dataset=dataset, proxies=opts["proxy"], **chosen)
        except ProxyError as exc:
            raise CommandError(str(exc)) from exc
        if opts["json"]:
            self.stdout.write(json.dumps(table, indent=1))
            return
        out = self.stdout.write
        out(f"random-ranking nDCG of '{dataset.name}': {opts['draws']} draws, seed {opts['seed']}, gain "
            f"{opts['gain']}, empty queries {opts['empty']}; mean = (video-to-text + text-to-video) / 2, x100")
        out("proxy\tmatrix\tmean\tstd\tmin\tmax\tvideo_to_text\ttext_to_video\texpected")
        for row in table["proxies"]:
            out("\t".join([row["proxy"], str(row["matrix"])] + [f"{100 * row[k]:.2f}" for k in (
                "mean", "std", "min", "max", "video_to_text", "text_to_video", "expected")]))
