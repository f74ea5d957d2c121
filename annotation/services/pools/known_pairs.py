"""Training and gold pairs for a pool that does not exist yet: the pool build form copies them
from another pool of the same dataset or reads them from a known-pairs CSV. Both are checked when
the build is asked for (so a bad file is a 400 naming file, line and field, and no pool is made),
then travel in the build job's parameters and are added by known_pairs_add right after the pool."""
from __future__ import annotations

from pathlib import Path

from annotation.analysis.params import Param
from annotation.formats.csv_uploads import csv_rows
from annotation.formats.errors import IssueCollector
from annotation.models import Dataset, Pool, PooledPair
from annotation.services.pools.build import PoolError, _known_pairs_check

# A known-pairs list rides in the job's JSON parameters; a few thousand is far more than any
# training queue or gold set needs.
MAX_KNOWN_PAIRS = 5000

# The build's ways of attaching known pairs, as the command line declares them (the API takes an
# uploaded file or a pool id as form fields: api/views/pools.py).
KNOWN_PAIRS_PARAMS = {
    "known_pairs": Param(str, None, "a CSV of training and gold pairs to attach to the pool, header "
                         "caption,clip,answer[,role][,explanation] (answer relevant or not_relevant; role training "
                         "or gold, default gold)", max_length=4096),
    "known_pairs_from": Param(int, None, "copy the training and gold pairs of this pool (its id) of the same dataset",
                              1),
}


def known_pairs_copied(*, dataset: Dataset, source_pool_id: int) -> list[dict]:
    """The training and gold pairs of another pool of this dataset, with answers and explanations."""
    source = Pool.objects.filter(pk=source_pool_id).first()
    if source is None:
        raise PoolError(f"pool {source_pool_id} does not exist")
    if source.dataset_id != dataset.pk:
        raise PoolError(f"pool '{source.name}' belongs to another dataset; known pairs name this dataset's captions and clips")
    rows = (PooledPair.objects.filter(pool=source, role__in=[PooledPair.Role.TRAINING, PooledPair.Role.GOLD])
            .order_by("role", "queue_order", "pk")
            .values_list("role", "caption__external_id", "clip__external_id", "known_answer", "explanation"))
    items = [{"caption": c, "clip": v, "answer": a, "role": r, "explanation": e or ""} for r, c, v, a, e in rows]
    if not items:
        raise PoolError(f"pool '{source.name}' has no training or gold pairs to copy")
    return items


def known_pairs_from_csv(*, dataset: Dataset, content: bytes, source_name: str = "known_pairs.csv") -> list[dict]:
    """Items from a CSV with header caption,clip,answer[,role][,explanation] (role defaults to gold),
    checked against this dataset; all problems raise ImportRejected naming the file, line and field."""
    issues = IssueCollector(source_name)
    rows = csv_rows(content, issues, required=("caption", "clip", "answer"), optional=("role", "explanation"))
    if not rows and not issues:
        issues.add(None, None, "the file lists no pairs")
    if len(rows) > MAX_KNOWN_PAIRS:
        issues.add(rows[MAX_KNOWN_PAIRS][0], None, f"more than {MAX_KNOWN_PAIRS} pairs; add the rest from the pool's page")
    numbered = [(line, row | {"role": row.get("role") or "gold"}) for line, row in rows]
    # The same check known_pairs_add makes on a real pool; an unsaved pool carries the dataset.
    _known_pairs_check(Pool(dataset=dataset), numbered, issues)
    issues.raise_if_any()
    return [{"caption": row["caption"], "clip": row["clip"], "answer": row["answer"], "role": row["role"],
             "explanation": row.get("explanation") or ""} for _, row in numbered]


def known_pair_roles(items: list[dict]) -> dict:
    return {"training": sum(i["role"] == "training" for i in items), "gold": sum(i["role"] == "gold" for i in items)}


def known_pairs_from_file(*, dataset: Dataset, path: str | Path) -> list[dict]:
    """known_pairs_from_csv on a file named on the command line; its errors name that path."""
    try:
        content = Path(path).read_bytes()
    except OSError as exc:
        raise PoolError(f"{path}: cannot read the known-pairs file ({exc.strerror or exc})") from None
    return known_pairs_from_csv(dataset=dataset, content=content, source_name=str(path))


def known_pairs_for_build(*, dataset: Dataset, source_pool_id: int | None = None, upload=None) -> list[dict]:
    """The known pairs a pool build asked for: copied from a pool, read from an uploaded CSV, or none."""
    if source_pool_id is not None and upload is not None:
        raise PoolError("copy known pairs from a pool or upload a CSV of them, not both")
    if source_pool_id is not None:
        return known_pairs_copied(dataset=dataset, source_pool_id=source_pool_id)
    if upload is not None:
        return known_pairs_from_csv(dataset=dataset, content=upload.read(), source_name=upload.name)
    return []
