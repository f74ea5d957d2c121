"""Deleting rows and everything that depends on them in set-based statements, on PostgreSQL and
SQLite alike: the deleting counterpart of bulk.py's inserts.

Django's own delete (Model.delete, QuerySet.delete, the admin's delete action) collects: it reads
the key of every dependent row into Python and deletes them a batch of ids at a time, so deleting a
1,000,000-shot dataset took 127.6 s and 661 MB in one process (issue 40). Here the plan is read once
from the models' relations (their `on_delete`), and each step is one statement whose rows the
database finds itself:

- every model reached from the root through CASCADE relations is deleted by each way it is reached
  (one foreign key per step): ``DELETE FROM child WHERE fk IN (SELECT id FROM parent WHERE ...)``,
  children before parents, so each statement's subquery still finds its parents; a row reached by
  two ways is deleted by the first and not found by the second;
- a SET_NULL relation into a doomed model is one ``UPDATE ... SET fk = NULL WHERE fk IN (...)``
  before that model's rows go;
- a PROTECT or RESTRICT relation with any row pointing into the doomed rows refuses the whole
  delete before anything is written (`DeleteProtected`), as Django's collector refuses (RESTRICT
  is held as strictly as PROTECT: no model here uses it);
- DO_NOTHING is left to the database; any other on_delete (SET_DEFAULT, SET(...)) is refused when
  the plan is made, so a model that adds one must be handled here first.

PostgreSQL checks a deleted row's references itself, row by row, at commit: for the 1,000,000
clips of a TRECVID collection that is two lookups in each of the nine tables referring to clips,
about 150 s of the 165 s such a delete took. When every relation into the doomed rows is one this
plan carries out (no DO_NOTHING) and the connection may (a superuser, as the compose file's
database user is), those per-row checks are switched off for the deletes alone (`SET LOCAL
session_replication_role = replica`), with the safety they gave kept another way: the doomed rows
that anything may refer to are first locked (FOR UPDATE, parents first), so a transaction adding a
row that refers to one waits for the delete and then fails, as the check would have made it; a
row added before the lock is seen by the deletes that follow it. Without the right, the checks run
and the delete is correct, only slower.

Each step is a plain IN subquery at the top of its WHERE clause, which PostgreSQL runs as a hashed
semi-join; no OR of subqueries (which it would run row by row). Nothing here holds rows in Python:
memory is the plan's, whatever the size. The caller runs the steps in one transaction (a job's),
so a failure part-way leaves every row where it was.
"""
from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from django.db import connection, models
from django.db.models import Model, QuerySet

#: on_delete handlers this module carries out.
_HANDLED = (models.CASCADE, models.SET_NULL, models.PROTECT, models.RESTRICT, models.DO_NOTHING)


class DeleteProtected(Exception):
    """Rows protected from deletion point into the rows to delete; `blockers` maps the protecting
    model's name to how many of its rows do."""

    def __init__(self, blockers: dict[str, int]) -> None:
        self.blockers = blockers
        super().__init__(", ".join(f"{count} {name}" for name, count in blockers.items()))


@dataclass(frozen=True)
class Way:
    """One way a model's rows are reached from the root: the foreign keys followed, from the
    model up (empty for the root itself)."""

    model: type[Model]
    keys: tuple[models.ForeignKey, ...]

    def rows(self, root: QuerySet) -> QuerySet:
        """The model's rows reached this way, as one lazy query (a nest of IN subqueries)."""
        chain = [self.model] + [key.related_model for key in self.keys]
        query = root
        # Built from the root down: each level keeps the rows whose key is among the level above's.
        for level in range(len(self.keys) - 1, -1, -1):
            key = self.keys[level]
            query = chain[level]._base_manager.filter(**{f"{key.name}__in": query.values(key.target_field.attname)})
        return query


@dataclass
class DeletePlan:
    """The statements that delete `root`'s rows and everything depending on them, in order."""

    root_model: type[Model]
    #: doomed models, children first, each with the ways it is reached.
    order: list[type[Model]] = field(default_factory=list)
    ways: dict[type[Model], list[Way]] = field(default_factory=dict)
    #: doomed model -> the relations into it that are set to NULL / that protect it.
    nulled: dict[type[Model], list[models.ForeignKey]] = field(default_factory=dict)
    protecting: dict[type[Model], list[models.ForeignKey]] = field(default_factory=dict)
    #: DO_NOTHING relations into doomed models (left to the database's own checks).
    unchecked: list[models.ForeignKey] = field(default_factory=list)
    #: doomed models some relation refers to (what a concurrent writer could point a new row at).
    referred: list[type[Model]] = field(default_factory=list)

    def rows(self, model: type[Model], root: QuerySet) -> Iterator[QuerySet]:
        """Every query of the model's doomed rows (one per way it is reached)."""
        for way in self.ways.get(model, ()):
            yield way.rows(root)

    def statements(self) -> int:
        """How many statements `delete_rows` runs at most (for progress)."""
        return sum(len(self.ways[m]) * (1 + len(self.nulled.get(m, ()))) for m in self.order) + sum(
            len(self.ways[m]) for m in self.referred)


def _reverse_relations(model: type[Model]):
    """The relations pointing at `model` (what Django's collector walks too)."""
    return [rel for rel in model._meta.get_fields(include_hidden=True)
            if rel.auto_created and not rel.concrete and (rel.one_to_many or rel.one_to_one)]


def _concrete(model: type[Model]) -> type[Model]:
    return model._meta.concrete_model


def delete_plan(root_model: type[Model]) -> DeletePlan:
    """The plan for deleting rows of `root_model`, read from the models' relations."""
    plan = DeletePlan(root_model=_concrete(root_model))
    ways: dict[type[Model], list[Way]] = {}
    hard: dict[type[Model], set[type[Model]]] = {}  # child -> parents it must go before

    def visit(way: Way, above: tuple[type[Model], ...]) -> None:
        ways.setdefault(way.model, []).append(way)
        for rel in _reverse_relations(way.model):
            child, key = _concrete(rel.related_model), rel.field
            if rel.on_delete not in _HANDLED:
                raise NotImplementedError(f"{child.__name__}.{key.name}: on_delete {rel.on_delete.__name__} is not "
                                          f"carried out by annotation/bulk_delete.py")
            if rel.on_delete is models.CASCADE:
                if child in above:
                    raise NotImplementedError(f"a cycle of CASCADE relations through {child.__name__}")
                hard.setdefault(child, set()).add(way.model)
                visit(Way(child, (key,) + way.keys), above + (child,))

    visit(Way(plan.root_model, ()), (plan.root_model,))
    doomed = set(ways)
    soft: list[tuple[type[Model], type[Model]]] = []
    for model in doomed:
        for rel in _reverse_relations(model):
            child = _concrete(rel.related_model)
            if rel.on_delete is models.SET_NULL:
                plan.nulled.setdefault(model, []).append(rel.field)
                if child in doomed:
                    soft.append((child, model))  # better gone before it is nulled for nothing
            elif rel.on_delete in (models.PROTECT, models.RESTRICT):
                plan.protecting.setdefault(model, []).append(rel.field)
            elif rel.on_delete is models.DO_NOTHING:
                plan.unchecked.append(rel.field)
    plan.order = _children_first(doomed, hard, soft)
    plan.referred = [m for m in reversed(plan.order) if _reverse_relations(m)]
    plan.ways = {m: ways[m] for m in plan.order}
    for table in (plan.nulled, plan.protecting):
        for keys in table.values():
            keys.sort(key=lambda k: (k.model._meta.label, k.name))
    return plan


def _children_first(doomed: set, hard: dict, soft: list) -> list:
    """A topological order of the doomed models where every child comes before its parents; a
    soft edge (a SET_NULL between two doomed models) is kept where it closes no cycle."""
    after: dict = {m: set(hard.get(m, ())) for m in doomed}  # m must come before each of these

    def reaches(start, goal) -> bool:
        seen, stack = set(), [start]
        while stack:
            node = stack.pop()
            if node is goal:
                return True
            if node not in seen:
                seen.add(node)
                stack.extend(after[node])
        return False

    for child, parent in sorted(soft, key=lambda e: (e[0]._meta.label, e[1]._meta.label)):
        if not reaches(parent, child):
            after[child].add(parent)
    order, placed = [], set()
    pending = sorted(doomed, key=lambda m: m._meta.label)
    while pending:
        # A model goes once nothing still pending must go before it.
        ready = [m for m in pending if not any(m in after[other] for other in pending if other is not m)]
        if not ready:
            raise NotImplementedError("the doomed models have no children-first order")
        order.extend(ready)
        placed |= set(ready)
        pending = [m for m in pending if m not in placed]
    return order


def _label(model: type[Model]) -> str:
    return model._meta.label


def delete_protected(plan: DeletePlan, root: QuerySet) -> dict[str, int]:
    """Rows of protecting relations that point into the doomed rows: model name -> how many."""
    found: dict[str, int] = {}
    for model, keys in plan.protecting.items():
        for rows in plan.rows(model, root):
            for key in keys:
                count = key.model._base_manager.filter(**{f"{key.name}__in": rows.values(key.target_field.attname)}).count()
                if count:
                    found[_label(key.model)] = found.get(_label(key.model), 0) + count
    return found


def doomed_counts(plan: DeletePlan, root: QuerySet) -> dict[str, int]:
    """How many rows of each model `delete_rows` would delete (by label; none left out), counted
    by the database: a row reached by several ways is counted once."""
    counts: dict[str, int] = {}
    for model in plan.order:
        ways = [rows.order_by().values("pk") for rows in plan.rows(model, root)]  # SQLite: no ORDER BY in a UNION
        rows = ways[0] if len(ways) == 1 else ways[0].union(*ways[1:])
        counts[_label(model)] = rows.count()
    return counts


def _may_skip_reference_checks(plan: DeletePlan) -> bool:
    """True where the database's per-row reference checks may be switched off for the deletes:
    PostgreSQL, a superuser connection, and no relation into the doomed rows left unhandled."""
    if connection.vendor != "postgresql" or plan.unchecked:
        return False
    with connection.cursor() as cursor:
        cursor.execute("SELECT rolsuper FROM pg_roles WHERE rolname = current_user")
        row = cursor.fetchone()
    return bool(row and row[0])


def _lock(rows: QuerySet) -> None:
    """Locks the rows FOR UPDATE without reading them into Python."""
    sql, params = rows.select_for_update(of=("self",)).values_list("pk").query.sql_with_params()
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT count(*) FROM ({sql}) AS locked", params)


def _session_replication_role(role: str) -> None:
    with connection.cursor() as cursor:
        cursor.execute(f"SET LOCAL session_replication_role = {role}")


def delete_rows(plan: DeletePlan, root: QuerySet,
                progress: Callable[[int, int, str], None] | None = None) -> dict[str, int]:
    """Deletes `root`'s rows and everything depending on them, as `plan` says; returns the rows
    deleted per model (by label; models with none left out) and `set null` per relation nulled.
    Raises DeleteProtected, writing nothing, when a protecting row points into them. Must run in
    a transaction: its locks and its statements belong together."""
    assert _concrete(root.model) is plan.root_model, (root.model, plan.root_model)
    assert connection.in_atomic_block, "delete_rows runs in a transaction"
    total, done = plan.statements(), 0
    fast = _may_skip_reference_checks(plan)
    if fast:
        for model in plan.referred:  # parents first: a writer waits at the first doomed row it meets
            for rows in plan.rows(model, root):
                _lock(rows)
                done += 1
                if progress:
                    progress(done, total, f"locking {model._meta.verbose_name_plural}")
    blockers = delete_protected(plan, root)  # after the locks: none can be added now
    if blockers:
        raise DeleteProtected(blockers)
    if fast:
        _session_replication_role("replica")
    counts: dict[str, int] = {}
    for model in plan.order:
        for rows in plan.rows(model, root):
            for key in plan.nulled.get(model, ()):
                nulled = key.model._base_manager.filter(**{f"{key.name}__in": rows.values(key.target_field.attname)}
                                                        ).update(**{key.name: None})
                if nulled:
                    name = f"{_label(key.model)}.{key.name} set null"
                    counts[name] = counts.get(name, 0) + nulled
                done += 1
            deleted = rows._raw_delete(rows.db)
            if deleted:
                counts[_label(model)] = counts.get(_label(model), 0) + deleted
            done += 1
            if progress:
                progress(done, total, f"deleting {model._meta.verbose_name_plural}")
    if fast:
        _session_replication_role("origin")
    return counts
