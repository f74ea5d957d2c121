"""Start targets of the pools area's operations (see __init__.py)."""

TARGETS = {
    "build_pool": lambda pool, runs, js: (pool.dataset, {"name": "another", "run_ids": [runs[0].pk]}),
    "pool_add_run": lambda pool, runs, js: (pool, {"run_id": runs[0].pk}),
    "judging_reorder": lambda pool, runs, js: (pool, {}),
    "build_moment_pool": lambda pool, runs, js: (pool.dataset, {"name": "another", "run_ids": [runs[0].pk]}),
    "build_sampled_pool": lambda pool, runs, js: (pool.dataset, {"name": "another", "run_ids": [runs[0].pk],
                                                                 "strata": [[1, 10, 1.0]]}),
    "delete_pool": lambda pool, runs, js: (pool, {}),
}

# The pool build takes its `judging` settings flat, each one a field of its own
# (api/views/pools.py JudgingSettingsFields), so that parameter is not a field.
NOT_A_FIELD = {("build_pool", "judging")}
ENDPOINTS = {
    "build_pool": (lambda pool, runs, js: "/api/v1/pools/build/", {"run_ids": "runs"},
                   lambda pool, runs, js: {"dataset": pool.dataset.pk}),
    "build_moment_pool": (lambda pool, runs, js: "/api/v1/moment-pools/", {"run_ids": "runs"},
                          lambda pool, runs, js: {"dataset": pool.dataset.pk}),
    "build_sampled_pool": (lambda pool, runs, js: "/api/v1/sampled-pools/", {"run_ids": "runs"},
                           lambda pool, runs, js: {"dataset": pool.dataset.pk}),
}
