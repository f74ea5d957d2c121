"""Start targets of the exports area's operations (see __init__.py): an export in each format,
and the export of any format that runs jobs queued before the registry."""

from annotation.services.exports.labels import EXPORT_FORMATS


def _pool(pool, runs, js):
    return pool, {}


TARGETS = {
    **{f"export_{fmt}": _pool for fmt in EXPORT_FORMATS},
    "export_labels": lambda pool, runs, js: (pool, {"format": "qrels"}),
}
# The export endpoint takes the any-format operation's fields: `format` and the format's `params`.
ENDPOINTS = {
    "export_labels": (lambda pool, runs, js: f"/api/v1/pools/{pool.pk}/exports/", {}, lambda pool, runs, js: {}),
}
