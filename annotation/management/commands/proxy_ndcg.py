import json

from django.core.management.base import CommandError

from annotation.models import Dataset
from annotation.selectors.ranking import proxy_matrix_list
from annotation.services.proxy_matrices import (EMPTY_QUERY_RULES, GAINS, MATRIX_PROXIES, NDCG_RULES, ProxyError,
                                                proxy_random_baseline)

from ._offline import OfflineCommand


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
        parser.add_argument("--draws", type=int, default=10, help="Random rankings drawn (default 10).")
        parser.add_argument("--seed", type=int, default=0, help="Seed of numpy.random.default_rng (default 0).")
        parser.add_argument("--gain", choices=GAINS, default="linear",
                            help="linear: S (the reference code's); exponential: 2^S - 1.")
        parser.add_argument("--empty", choices=EMPTY_QUERY_RULES, default="skip",
                            help="Queries with no S > 0: left out of the means (skip) or scored 0 (zero).")
        parser.add_argument("--json", action="store_true", help="Print JSON instead of a table.")

    def handle(self, *args, **opts):
        dataset = Dataset.objects.filter(name=opts["dataset"]).first()
        if dataset is None:
            raise CommandError(f"no dataset named '{opts['dataset']}'")
        newest: dict[str, object] = {}
        for artefact in proxy_matrix_list(dataset=dataset).order_by("created_at", "pk"):
            newest[artefact.params.get("proxy")] = artefact  # later ones replace earlier ones
        wanted = opts["proxy"] or [p for p in MATRIX_PROXIES if p in newest]
        missing = [p for p in wanted if p not in newest]
        if not wanted or missing:
            raise CommandError(f"dataset '{dataset.name}' has no stored matrix for {', '.join(missing) or 'any proxy'}: "
                               f"run compute_proxies --dataset {dataset.name} --proxy {' '.join(missing) or 'all'} first")
        try:
            results = proxy_random_baseline(dataset=dataset, artefacts=[newest[p] for p in wanted], draws=opts["draws"],
                                            seed=opts["seed"], gain=opts["gain"], empty=opts["empty"])
        except ProxyError as exc:
            raise CommandError(str(exc)) from exc
        rows = [{"proxy": loaded.label, "matrix": loaded.artefact.pk, "mean": r.mean, "std": r.std,
                 "min": r.minimum, "max": r.maximum, "video_to_text": r.video_to_text,
                 "text_to_video": r.text_to_video, "expected": r.expected} for loaded, r in results]
        conventions = {"draws": opts["draws"], "seed": opts["seed"], "gain": opts["gain"], "empty": opts["empty"],
                       "ranking": "uniform [0, 1) scores from numpy.random.default_rng(seed), one matrix a draw, "
                                  "shared by every proxy", **NDCG_RULES}
        if opts["json"]:
            self.stdout.write(json.dumps({"dataset": dataset.name, "conventions": conventions, "proxies": rows},
                                         indent=1))
            return
        out = self.stdout.write
        out(f"random-ranking nDCG of '{dataset.name}': {opts['draws']} draws, seed {opts['seed']}, gain "
            f"{opts['gain']}, empty queries {opts['empty']}; mean = (video-to-text + text-to-video) / 2, x100")
        out("proxy\tmatrix\tmean\tstd\tmin\tmax\tvideo_to_text\ttext_to_video\texpected")
        for row in rows:
            out("\t".join([row["proxy"], str(row["matrix"])] + [f"{100 * row[k]:.2f}" for k in (
                "mean", "std", "min", "max", "video_to_text", "text_to_video", "expected")]))
