"""Issue 26: benches default to data inside the repository (or a path given on the command line),
and to a database and port of each run's own, overridable; read from their source (no bench runs)."""
from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "bench"
BENCHES = sorted(p for p in BENCH.glob("*.py"))


def _strings_outside_docstrings(tree: ast.AST) -> list[ast.Constant]:
    docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                  if isinstance(node, (ast.Module, ast.FunctionDef, ast.ClassDef)) and node.body
                  and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)}
    return [n for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)
            and id(n) not in docstrings]


def test_no_bench_defaults_to_data_outside_the_repository():
    offenders = {}
    for path in BENCHES:
        tree = ast.parse(path.read_text())
        bad = [n.value for n in _strings_outside_docstrings(tree)
               if (n.value.startswith("/work/") and len(n.value) > len("/work/")) or n.value.startswith("../") or n.value in ("shared", "shared/datasets")
               or n.value.startswith("shared/")]
        # REPO.parent / "..." reaches beside the checkout
        bad += [ast.unparse(n) for n in ast.walk(tree) if isinstance(n, ast.BinOp) and isinstance(n.op, ast.Div)
                and "REPO.parent" in ast.unparse(n.left)]
        if bad:
            offenders[path.name] = bad
    assert offenders == {}


def test_no_bench_names_a_fixed_database_or_port():
    offenders = {}
    for path in BENCHES:
        tree = ast.parse(path.read_text())
        # A server (postgres://host:port) is fine; a database name after it is shared by every run.
        bad = [n.value for n in _strings_outside_docstrings(tree) if re.match(r"postgres://[^/]+/\w", n.value)]
        for call in ast.walk(tree):
            if (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and call.func.attr == "add_argument"
                    and call.args and isinstance(call.args[0], ast.Constant) and call.args[0].value == "--port"):
                default = next((k.value for k in call.keywords if k.arg == "default"), None)
                if isinstance(default, ast.Constant) and default.value is not None:
                    bad.append(f"--port default {default.value}")
        if bad:
            offenders[path.name] = bad
    assert offenders == {}


def test_every_bench_that_uses_a_database_takes_database_url():
    for path in BENCHES:
        text = path.read_text()
        if "django_for_bench(" in text or "bench_database_url(" in text:
            if path.name != "_setup.py":
                assert '"--database-url"' in text, path.name


def _setup_says(code: str, **env) -> str:
    clean = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"} | env
    return subprocess.run([sys.executable, "-c", f"import sys; sys.path.insert(0, {str(BENCH)!r}); import _setup; {code}"],
                          capture_output=True, text=True, check=True, env=clean, timeout=120).stdout.strip()


def test_the_default_database_is_the_runs_own_and_given_ones_win():
    first = _setup_says("print(_setup.bench_database_url(None, 'rejudge_bench_x'))")
    second = _setup_says("print(_setup.bench_database_url(None, 'rejudge_bench_x'))")
    assert first.startswith("postgres://postgres@127.0.0.1:5432/rejudge_bench_x_") and first != second
    assert _setup_says("print(_setup.bench_database_url(None, 'rejudge_bench_x', keep=True))").endswith("/rejudge_bench_x")
    given = "postgres://u@db:5433/mine"
    assert _setup_says(f"print(_setup.bench_database_url({given!r}))") == given
    assert _setup_says("print(_setup.bench_database_url(None))", DATABASE_URL=given) == given
    port = int(_setup_says("print(_setup.free_port())"))
    assert 0 < port < 65536
