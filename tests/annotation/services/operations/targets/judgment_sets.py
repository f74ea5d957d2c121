"""Start targets of the judgment-set area's operations (see __init__.py)."""
from annotation.models.judgment_sets import JudgmentSet


def _raw_labels(pool) -> JudgmentSet:
    """A rater_labels set of the pool's dataset: agreement is measured on raw labels only."""
    return JudgmentSet.objects.get_or_create(dataset=pool.dataset, name="raw labels",
                                             defaults={"source_format": "rater_labels", "checksum": "r" * 64})[0]


TARGETS = {
    "evaluate_judgment_set": lambda pool, runs, js: (js, {"run_ids": [runs[0].pk]}),
    "judgment_set_agreement": lambda pool, runs, js: (_raw_labels(pool), {}),
    "judgment_set_from_pool": lambda pool, runs, js: (pool, {}),
    "import_judgments": lambda pool, runs, js: (pool.dataset, {}),
    "delete_judgment_set": lambda pool, runs, js: (js, {}),
}
# The import takes a multipart upload, not JSON; its refusals are the start service's (above).
ENDPOINTS = {
    "evaluate_judgment_set": (lambda pool, runs, js: f"/api/v1/judgment-sets/{js.pk}/evaluate/", {"run_ids": "runs"},
                              lambda pool, runs, js: {}),
    "judgment_set_agreement": (lambda pool, runs, js: f"/api/v1/judgment-sets/{_raw_labels(pool).pk}/agreement/", {},
                               lambda pool, runs, js: {}),
    "judgment_set_from_pool": (lambda pool, runs, js: f"/api/v1/pools/{pool.pk}/judgment-sets/", {},
                               lambda pool, runs, js: {}),
}
