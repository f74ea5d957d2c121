"""Issue 23 finding 3: crowd-kit is installed without the dependencies it declares but never
imports (transformers and the Hugging Face stack, pyarrow), the same way by scripts/setup.sh and
the image (scripts/install_requirements.sh), and what its aggregation code does import is pinned."""
from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

from tests.deploy.files import REPO, dockerfile

HELPER = REPO / "scripts" / "install_requirements.sh"


def _pins(path: Path) -> dict[str, str]:
    out = {}
    for line in path.read_text().splitlines():
        match = re.match(r"([A-Za-z0-9_.-]+)(?:\[[^\]]*\])?==([^\s#;]+)", line.strip())
        if match:
            out[match.group(1).lower().replace("_", "-")] = match.group(2)
    return out


def test_crowd_kit_is_the_one_line_installed_without_its_dependencies():
    marked = [line for line in (REPO / "requirements.txt").read_text().splitlines() if "# no-deps" in line]
    assert [line.split()[0] for line in marked] == ["crowd-kit==1.4.2"]


def test_what_crowdkit_aggregation_imports_is_pinned_and_what_it_never_imports_is_not():
    import crowdkit

    root = Path(crowdkit.__file__).parent
    imported = set()
    for source in [root / "__init__.py", *sorted((root / "aggregation").rglob("*.py"))]:
        for node in ast.walk(ast.parse(source.read_text())):
            if isinstance(node, ast.Import):
                imported |= {a.name.split(".")[0] for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                imported.add(node.module.split(".")[0])
    distribution = {"attr": "attrs", "sklearn": "scikit-learn"}
    third_party = {distribution.get(m, m) for m in imported - set(sys.stdlib_module_names) - {"crowdkit"}
                   if not m.startswith("__")}  # `__res`: a Yandex build's resource module, tried then skipped
    pins = _pins(REPO / "requirements.txt")
    assert third_party <= set(pins), sorted(third_party - set(pins))
    assert {"transformers", "pyarrow", "torch"} & imported == set()
    assert not {"transformers", "pyarrow", "tokenizers", "huggingface-hub"} & set(pins)


def test_setup_sh_and_the_image_install_through_the_same_helper():
    setup = (REPO / "scripts" / "setup.sh").read_text()
    assert "scripts/install_requirements.sh .venv/bin/python requirements.txt" in setup
    assert "-r requirements.txt" not in (REPO / "requirements-dev.txt").read_text().split("\n#")[-1]
    runs = [i.args for i in dockerfile() if i.name == "RUN"]
    assert any("install_requirements.sh /opt/venv/bin/python /tmp/req/requirements.txt" in r for r in runs)
    copies = [i.args.split() for i in dockerfile() if i.name == "COPY"]
    assert ["requirements.txt", "scripts/install_requirements.sh", "/tmp/req/"] in copies


def test_the_helper_passes_the_marked_line_to_pip_without_dependencies(tmp_path):
    # A stand-in interpreter that records the pip calls it gets.
    calls = tmp_path / "calls"
    python = tmp_path / "python"
    python.write_text(f'#!/bin/sh\necho "$@" >> {calls}\nfor a; do case "$a" in *.txt) cat "$a" >> {calls};; esac; done\n')
    python.chmod(0o755)
    requirements = tmp_path / "requirements.txt"
    requirements.write_text("# a comment\nalpha==1.0\nbeta==2.0  # no-deps\ngamma[x]==3.0\n")
    subprocess.run(["sh", str(HELPER), str(python), str(requirements), "-q"], check=True)
    lines = calls.read_text().splitlines()
    first = lines.index(next(l for l in lines if l.startswith("-m pip install -q -r")))
    second = lines.index(next(l for l in lines if l.startswith("-m pip install -q --no-deps -r")))
    assert first < second
    assert "alpha==1.0" in lines[first:second] and "gamma[x]==3.0" in lines[first:second]
    assert "beta==2.0" not in "\n".join(lines[first:second])
    assert [l.strip() for l in lines[second + 1:]] == ["beta==2.0"]
