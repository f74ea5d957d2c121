"""A judgment set made of a pool's resolved labels, so a pool's outcome can be scored, compared
with the benchmark's own files and published like any imported set.

The set holds the pool's corrected qrels as the qrels export writes them (every resolved pool pair,
1 relevant or 0 not; with `originals`, every caption's original clip as 1, FIRE's convention) and
is read back as TREC qrels. It does not seed pools: its verdicts came from a pool, and another pool
of the dataset takes them from that pool's own labels if it shares its pairs.
"""
from __future__ import annotations

import tempfile
from pathlib import Path

from django.db import transaction

from annotation.formats.errors import FileIssue, ImportRejected
from annotation.formats.qrels import write_qrels
from annotation.models import Pool
from annotation.models.judgment_sets import JudgmentSet
from annotation.selectors.exports import export_qrels_rows

from .imports import JudgmentsImportResult, judgments_import


def judgment_set_from_pool(*, pool: Pool, name: str | None = None, originals: bool = True,
                           created_by=None) -> JudgmentsImportResult:
    """A new set with the pool's resolved labels as they stand now. The same labels taken twice
    give the first set back (same qrels, same checksum)."""
    name = name or f"{pool.name} labels"
    with tempfile.TemporaryDirectory(prefix="rejudge-pool-qrels-") as folder:
        path = Path(folder) / f"pool-{pool.pk}.qrels"
        with path.open("w") as out:
            rows = write_qrels(out, export_qrels_rows(pool=pool, originals=originals))
        if not rows:
            raise ImportRejected([FileIssue(path.name, None, None, f"pool '{pool.name}' has no resolved pair yet")])
        with transaction.atomic():
            outcome = judgments_import(dataset=pool.dataset, path=path, fmt=JudgmentSet.Format.QRELS, name=name,
                                       seeds_pools=False, created_by=created_by)
            if outcome.created:
                judgment_set = outcome.judgment_set
                judgment_set.source_format = JudgmentSet.Format.POOL
                judgment_set.pool = pool
                judgment_set.params = {"pool_id": pool.pk, "originals": originals}
                judgment_set.save(update_fields=["source_format", "pool", "params"])
    return outcome
