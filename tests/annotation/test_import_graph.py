"""The shape of the project's imports (annotation/, api/, frontend/, config/), read from the source
(no module is imported). The layers, lowest first (docs/architecture.md):

    analysis, formats  ->  models  ->  selectors  ->  services  ->  tasks, api, frontend

- no import circle among the modules, counting imports inside functions too: an import moved into
  a function to dodge a circle leaves the circle in the design;
- analysis/ and formats/ stay plain Python: no Django (nor Celery, DRF or the settings), and no
  project module outside analysis/ and formats/, which would bring Django in;
- models import no services, selectors or formats (a rule a model needs lives in analysis/ or in
  the model's own module), nor anything above them;
- selectors read, so they import no services (a name both need lives in the lower of the two);
- api/ and frontend/ are two doors onto the same services and import nothing of each other: what
  both need lives below them, in annotation/; annotation/ imports neither;
- the provenance helpers (json_ready, report_versions) import nothing of the project.
"""
from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("annotation", "api", "frontend", "config")
FRAMEWORKS = ("django", "celery", "rest_framework", "drf_spectacular", "config")


def _modules() -> dict[str, Path]:
    found = {}
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            if "migrations" in path.relative_to(ROOT).parts:
                continue
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


MODULES = _modules()


def _imported_names(name: str, path: Path) -> set[str]:
    """Every module the file imports, at module level or inside functions, written absolute. `from
    package import name` counts as the submodule package.name when there is one, else as package."""
    is_package = path.name == "__init__.py"
    names = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = name.split(".") if is_package else name.split(".")[:-1]
                base = base[:len(base) - (node.level - 1)]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module
            for alias in node.names:
                names.add(f"{module}.{alias.name}" if f"{module}.{alias.name}" in MODULES else module)
    return names


def _project_module(imported: str) -> str | None:
    """The project module an import names (a name inside a module counts as the module)."""
    while imported and imported not in MODULES:
        imported = imported.rpartition(".")[0]
    return imported or None


def _graph() -> dict[str, set[str]]:
    graph = {}
    for name, path in MODULES.items():
        targets = {_project_module(imported) for imported in _imported_names(name, path)}
        graph[name] = {t for t in targets if t and t != name}
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan's algorithm, iterative)."""
    index, low, on_stack, stack, found = {}, {}, set(), [], []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, successors = work[-1]
            for successor in successors:
                if successor not in index:
                    index[successor] = low[successor] = len(index)
                    stack.append(successor)
                    on_stack.add(successor)
                    work.append((successor, iter(sorted(graph[successor]))))
                    break
                if successor in on_stack:
                    low[node] = min(low[node], index[successor])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
    return found


def test_the_cycle_finder_finds_a_circle_through_a_function_level_import():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert _cycles(graph) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_the_graph_reads_relative_and_function_level_imports():
    graph = _graph()
    # analysis/proxies/api.py: `from .features import ...` at module level
    assert "annotation.analysis.proxies.features" in graph["annotation.analysis.proxies.api"]
    # services/judging/simulation.py reads judgment sets through an import inside a function
    assert "annotation.services.judgment_sets.scoring" in graph["annotation.services.judging.simulation"]


def test_no_import_circles_among_the_project_modules():
    cycles = _cycles(_graph())
    assert cycles == [], "import circles (module-level and function-level imports):\n" + (
        "\n".join(" <-> ".join(cycle) for cycle in cycles))


def _outside_imports(folder: str, allowed: tuple[str, ...]) -> dict[str, set[str]]:
    offenders = {}
    for name, path in MODULES.items():
        if not name.startswith(f"annotation.{folder}"):
            continue
        bad = {imported for imported in _imported_names(name, path)
               if imported.split(".")[0] in FRAMEWORKS
               or (imported.split(".")[0] == "annotation" and not imported.startswith(allowed))}
        if bad:
            offenders[name] = bad
    return offenders


def test_analysis_imports_no_django_and_nothing_of_the_project_outside_analysis():
    assert _outside_imports("analysis", ("annotation.analysis",)) == {}


def test_formats_import_no_django_and_only_analysis_and_formats_of_the_project():
    assert _outside_imports("formats", ("annotation.formats", "annotation.analysis")) == {}


def test_the_provenance_helpers_import_nothing_of_the_project():
    path = MODULES["annotation.provenance"]
    imported = _imported_names("annotation.provenance", path)
    assert {name for name in imported if name.split(".")[0] in ("annotation", *FRAMEWORKS)} == set()


def _imports_into(folders: tuple[str, ...], forbidden: tuple[str, ...]) -> dict[str, set[str]]:
    """module -> the project modules it imports under `forbidden`, for every module under `folders`
    (dotted prefixes: 'annotation.models' is the package and everything in it)."""
    def under(name: str, prefixes: tuple[str, ...]) -> bool:
        return any(name == prefix or name.startswith(prefix + ".") for prefix in prefixes)

    graph = _graph()
    return {name: bad for name in sorted(graph) if under(name, folders)
            if (bad := {target for target in graph[name] if under(target, forbidden)})}


UPPER = ("annotation.tasks", "annotation.management", "api", "frontend", "config")


def test_the_rule_finder_sees_a_wrong_way_import():
    # api/urls.py imports api/views: a rule forbidding api.views to api.urls finds it
    assert "api.urls" in _imports_into(("api.urls",), ("api.views",))
    assert _imports_into(("api.urls",), ("frontend",)) == {}


def test_models_import_no_services_selectors_or_formats():
    assert _imports_into(("annotation.models",), ("annotation.services", "annotation.selectors",
                                                  "annotation.formats", *UPPER)) == {}


def test_selectors_import_no_services():
    assert _imports_into(("annotation.selectors",), ("annotation.services", *UPPER)) == {}


def test_services_import_no_tasks_and_nothing_above_them():
    assert _imports_into(("annotation.services",), UPPER) == {}


def test_api_and_frontend_import_nothing_of_each_other():
    assert _imports_into(("api",), ("frontend",)) == {}
    assert _imports_into(("frontend",), ("api",)) == {}


def test_annotation_imports_neither_api_nor_frontend():
    assert _imports_into(("annotation",), ("api", "frontend")) == {}
