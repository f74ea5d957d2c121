"""Start targets of the releases area's operations (see __init__.py)."""

TARGETS = {"create_release": lambda pool, runs, js: (None, {"name": "bench", "pool_ids": [pool.pk]})}
ENDPOINTS = {
    "create_release": (lambda pool, runs, js: "/api/v1/releases/", {"pool_ids": "pools",
                                                                    "judgment_set_ids": "judgment_sets"},
                       lambda pool, runs, js: {}),
}
