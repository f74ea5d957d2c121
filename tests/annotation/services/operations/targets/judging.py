"""Start targets of the judging area's operations (see __init__.py)."""

TARGETS = {"judging_simulation": lambda pool, runs, js: (js, {"run_ids": [runs[0].pk]})}
ENDPOINTS = {
    "judging_simulation": (lambda pool, runs, js: f"/api/v1/judgment-sets/{js.pk}/judging-simulation/",
                           {"run_ids": "runs"}, lambda pool, runs, js: {}),
}
