"""Start targets of the media area's operations (see __init__.py)."""

TARGETS = {
    "check_media": lambda pool, runs, js: (pool.dataset, {}),
    "prepare_media": lambda pool, runs, js: (pool.dataset, {}),
}
ENDPOINTS = {
    "check_media": (lambda pool, runs, js: f"/api/v1/datasets/{pool.dataset.pk}/media-check/", {}, lambda *a: {}),
    "prepare_media": (lambda pool, runs, js: f"/api/v1/datasets/{pool.dataset.pk}/media-prepare/", {},
                      lambda *a: {}),
}
