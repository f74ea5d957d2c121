"""Datasets made from a benchmark's own files, so a judgment set names real captions and clips."""
from __future__ import annotations

import json
from pathlib import Path

from annotation.services.datasets.imports import dataset_import


def dataset_from_ids(folder: Path, *, queries, items, name: str = "bench"):
    """A dataset whose captions are `queries` (topics with no original positive) and clips `items`."""
    folder.mkdir(parents=True, exist_ok=True)
    manifest = folder / f"{name}.jsonl"
    with manifest.open("w") as out:
        for item in dict.fromkeys(items):
            out.write(json.dumps({"kind": "clip", "id": item}) + "\n")
        for query in dict.fromkeys(queries):
            out.write(json.dumps({"kind": "caption", "id": query, "text": f"topic {query}"}) + "\n")
    return dataset_import(path=manifest, name=name)


def ids_of_trec_files(*paths: Path, query_column: int = 0, item_column: int = 2) -> tuple[list[str], list[str]]:
    queries, items = [], []
    for path in paths:
        for line in Path(path).read_text().splitlines():
            parts = line.split()
            if parts:
                queries.append(parts[query_column])
                items.append(parts[item_column])
    return queries, items
