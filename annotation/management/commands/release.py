"""`release create | diff | list`: versioned, immutable releases of a corrected benchmark
(annotation/services/releases; README "Releases")."""
from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from annotation.models import Dataset
from annotation.selectors.releases import release_by_slug, release_list
from annotation.services.releases.create import ReleaseError, release_create
from annotation.services.releases.diff import ReleaseDiffError, release_diff_listing
from annotation.services.releases.operations import PARAMS as RELEASE_PARAMS

from ._declared import add_declared_arguments, declared_clean, declared_given, declared_help
from ._progress import ConsoleProgress
from .report import pool_from_option


def _judgment_set(text: str):
    dataset_name, sep, name = text.partition(":")
    if not sep or not dataset_name or not name:
        raise CommandError(f"--judgment-set {text!r}: give it as DATASET:NAME")
    dataset = Dataset.objects.filter(name=dataset_name).first()
    if dataset is None:
        raise CommandError(f"--judgment-set {text!r}: no dataset named '{dataset_name}'")
    found = dataset.judgment_sets.filter(name=name).first()
    if found is None:
        raise CommandError(f"--judgment-set {text!r}: no judgment set '{name}' in '{dataset_name}'")
    return found


def _release(slug: str):
    found = release_by_slug(slug)
    if found is None:
        raise CommandError(f"no release {slug!r} (give NAME@vN; `release list` shows them)")
    return found


class Command(BaseCommand):
    help = "Make, compare and list releases: numbered, immutable archives of a corrected benchmark."

    def add_arguments(self, parser):
        sub = parser.add_subparsers(dest="action", required=True)
        create = sub.add_parser("create", help="freeze the resolved labels of pools (and judgment sets) as the next "
                                               "version of NAME")
        create.add_argument("--pool", action="append", default=[], help="Pool id or unique name (repeatable).")
        create.add_argument("--judgment-set", action="append", default=[], metavar="DATASET:NAME",
                            help="An imported judgment set (repeatable); pools win where both judge a pair.")
        # Declared once with the create_release operation (services/releases/operations.py), as
        # POST releases/ takes them; the authors are separated by ';' here (a name may hold a comma).
        add_declared_arguments(create, RELEASE_PARAMS, names=("name", "title", "licence", "allow_unresolved"))
        create.add_argument("--authors", default="", help=f"{declared_help(RELEASE_PARAMS['authors'])}; separated by ';'")
        diff = sub.add_parser("diff", help="what changed between two releases: NAME@v1 NAME@v2")
        diff.add_argument("old")
        diff.add_argument("new")
        diff.add_argument("--limit", type=int, default=None, help="List at most this many pairs of each kind.")
        listing = sub.add_parser("list", help="every release, newest version first")
        listing.add_argument("--name", default=None)

    def handle(self, *args, **opts):
        getattr(self, f"_{opts['action']}")(opts)

    def _create(self, opts):
        pools = [pool_from_option(p) for p in opts["pool"]]
        sets = [_judgment_set(s) for s in opts["judgment_set"]]
        authors = [a.strip() for a in opts["authors"].split(";") if a.strip()]
        given = declared_given(opts, RELEASE_PARAMS, names=("name", "title", "licence", "allow_unresolved"))
        clean = declared_clean(RELEASE_PARAMS, given | {"authors": authors}, owner="release create")
        try:
            release = release_create(pools=pools, judgment_sets=sets, name=clean["name"], title=clean["title"],
                                     licence=clean["licence"], authors=clean["authors"],
                                     allow_unresolved=clean["allow_unresolved"],
                                     progress=ConsoleProgress(f"release {clean['name']}"))
        except ReleaseError as exc:
            raise CommandError(str(exc)) from exc
        changes = release.counts.get("changes", {})
        self.stdout.write(self.style.SUCCESS(
            f"release {release.slug} (id {release.pk}): {release.archive} in the exports storage, "
            f"{release.bytes:,} bytes, sha256 {release.sha256}; {release.counts['qrels_pairs']:,} qrels pairs over "
            f"{release.counts['queries']:,} queries; changes since the previous version: "
            + ", ".join(f"{changes.get(k, 0)} {k}" for k in ("added", "changed", "removed"))))

    def _diff(self, opts):
        old, new = _release(opts["old"]), _release(opts["new"])
        if old.name != new.name:
            self.stderr.write(f"note: comparing two names ({old.name}, {new.name})")
        try:
            with release_diff_listing(old=old, new=new, limit=opts["limit"]) as (diff, listed):
                counts = diff["counts"]
                self.stdout.write(f"{diff['from']} -> {diff['to']}: {counts['added']} added, "
                                  f"{counts['changed']} changed, {counts['removed']} removed")
                pending = next(listed, None)  # listed: (kind, change), kind by kind, in counts' order
                for kind in counts:
                    shown = 0
                    while pending is not None and pending[0] == kind:
                        change = pending[1]
                        old_rel = "-" if change["old_relevance"] is None else change["old_relevance"]
                        new_rel = "-" if change["new_relevance"] is None else change["new_relevance"]
                        self.stdout.write(f"{kind:8} {change['query_id']} {change['clip_id']} {old_rel} -> "
                                          f"{new_rel}  ({change['reason']})")
                        shown += 1
                        pending = next(listed, None)
                    if shown < counts[kind]:
                        self.stdout.write(f"{kind:8} ... {counts[kind] - shown} more")
        except ReleaseDiffError as exc:
            raise CommandError(str(exc)) from exc

    def _list(self, opts):
        releases = release_list(name=opts["name"])
        if not releases.exists():
            self.stdout.write("no releases")
            return
        self.stdout.write("id\trelease\tdataset\tcreated\tqrels_pairs\tbytes\tsha256")
        for r in releases:
            self.stdout.write(f"{r.pk}\t{r.slug}\t{r.dataset.name}\t{r.created_at:%Y-%m-%d %H:%M}\t"
                              f"{r.counts.get('qrels_pairs', 0)}\t{r.bytes}\t{r.sha256}")
