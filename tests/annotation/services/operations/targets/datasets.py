"""Start targets of the datasets area's operations (see __init__.py). Both imports take an upload
(multipart), so neither has a JSON start endpoint here; their declared fields are refused at the
upload endpoints by the same declarations."""

TARGETS = {
    "import_dataset": lambda pool, runs, js: (None, {"name": "another"}),
    "import_run": lambda pool, runs, js: (pool.dataset, {}),
    "delete_dataset": lambda pool, runs, js: (pool.dataset, {}),
}
