"""Readers for the deployment files, for tests that cannot run Docker here (client only): the
Dockerfile's instructions, .dockerignore's rules with Docker's matching, the compose file as YAML."""
from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Instruction:
    name: str  # upper case: FROM, RUN, COPY, ...
    args: str  # as written, continuation lines joined

    def argv(self) -> list[str]:
        """Exec form (JSON array) or shell form split as the shell would."""
        text = self.args.strip()
        if text.startswith("["):
            return yaml.safe_load(text)
        return shlex.split(text)


def dockerfile(path: Path = REPO / "Dockerfile") -> list[Instruction]:
    out, pending = [], ""
    for line in path.read_text().splitlines():
        stripped = line.strip()
        if not pending and (not stripped or stripped.startswith("#")):
            continue
        if pending and stripped.startswith("#"):
            continue  # a comment inside a continued instruction is dropped by Docker
        if stripped.endswith("\\"):
            pending += stripped[:-1] + " "
            continue
        full = pending + stripped
        pending = ""
        name, _, args = full.partition(" ")
        out.append(Instruction(name.upper(), args.strip()))
    assert not pending, "the Dockerfile ends inside a continued line"
    return out


def _pattern_regex(pattern: str) -> re.Pattern:
    """Docker's .dockerignore syntax (Go's filepath.Match plus `**`), anchored at the context root."""
    out, i = "", 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out += "(?:.*/)?"
            i += 3
        elif pattern.startswith("**", i):
            out += ".*"
            i += 2
        elif pattern[i] == "*":
            out += "[^/]*"
            i += 1
        elif pattern[i] == "?":
            out += "[^/]"
            i += 1
        else:
            out += re.escape(pattern[i])
            i += 1
    return re.compile(out + "$")


def dockerignore_rules(path: Path = REPO / ".dockerignore") -> list[tuple[bool, re.Pattern]]:
    rules = []
    for line in path.read_text().splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        negate = line.startswith("!")
        pattern = line[1:] if negate else line
        rules.append((negate, _pattern_regex(pattern.strip().lstrip("/").rstrip("/"))))
    return rules


def excluded(relative: str, rules=None) -> bool:
    """Whether Docker leaves `relative` (a path in the build context) out: the last rule that
    matches the path or one of its parent folders decides."""
    rules = dockerignore_rules() if rules is None else rules
    parts = relative.split("/")
    prefixes = ["/".join(parts[:n]) for n in range(1, len(parts) + 1)]
    verdict = False
    for negate, regex in rules:
        if any(regex.match(prefix) for prefix in prefixes):
            verdict = not negate
    return verdict


def compose(path: Path = REPO / "docker-compose.yml") -> dict:
    return yaml.safe_load(path.read_text())
