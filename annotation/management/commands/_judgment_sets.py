"""Naming a stored judgment set on the command line: --dataset D --judgment-set NAME, or a file."""
from __future__ import annotations

from django.core.management.base import CommandError

from annotation.models import Dataset


def stored_judgment_set(opts):
    """The set named by --dataset/--judgment-set, None when --judgments names a file instead."""
    if opts.get("judgments") and (opts.get("dataset") or opts.get("judgment_set")):
        raise CommandError("give either --judgments FILE or --dataset D --judgment-set NAME, not both")
    if not opts.get("judgments") and not (opts.get("dataset") and opts.get("judgment_set")):
        raise CommandError("name the judgments: --judgments FILE, or --dataset D --judgment-set NAME")
    if opts.get("judgments"):
        return None
    dataset = Dataset.objects.filter(name=opts["dataset"]).first()
    if dataset is None:
        raise CommandError(f"no dataset named '{opts['dataset']}'")
    judgment_set = dataset.judgment_sets.filter(name=opts["judgment_set"]).first()
    if judgment_set is None:
        names = ", ".join(dataset.judgment_sets.values_list("name", flat=True)[:20]) or "none"
        raise CommandError(f"no judgment set '{opts['judgment_set']}' in '{dataset.name}' (sets: {names})")
    return judgment_set
