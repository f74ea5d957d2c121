"""Start targets of the proxies area's operations (see __init__.py)."""
from annotation.models import Artefact


def _matrix(dataset) -> Artefact:
    # The checks read the row only (its kind and dataset), never the file.
    return Artefact.objects.create(dataset=dataset, kind="proxy_matrix", name="bow.npz", path="proxy_matrices/bow.npz",
                                   params={"proxy": "bow", "mode": "modern", "synsets": None, "min_fraction": 0.25})


TARGETS = {
    "proxy_matrices": lambda pool, runs, js: (pool.dataset, {"proxies": ["bow"]}),
    "proxy_ndcg": lambda pool, runs, js: (runs[0], {"artefact_id": _matrix(pool.dataset).pk}),
    "proxy_analysis": lambda pool, runs, js: (pool.dataset, {"artefact_ids": [_matrix(pool.dataset).pk]}),
}

# The matrices endpoint takes one proxy (or all) as `proxy`, not the declared list.
NOT_A_FIELD = {("proxy_matrices", "proxies")}
ENDPOINTS = {
    "proxy_matrices": (lambda pool, runs, js: f"/api/v1/datasets/{pool.dataset.pk}/proxies/", {},
                       lambda pool, runs, js: {"proxy": "bow"}),
    "proxy_ndcg": (lambda pool, runs, js: f"/api/v1/runs/{runs[0].pk}/proxy-ndcg/", {"artefact_id": "matrix"},
                   lambda pool, runs, js: {}),
    "proxy_analysis": (lambda pool, runs, js: f"/api/v1/datasets/{pool.dataset.pk}/proxy-analysis/",
                       {"artefact_ids": "matrices"}, lambda pool, runs, js: {}),
}
