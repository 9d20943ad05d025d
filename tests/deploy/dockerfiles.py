"""A small reader of Dockerfiles: instructions per stage, as the builder sees them.

Enough for the deployment tests, not a general parser: it joins continued lines,
drops comments and parser directives, splits each instruction into its keyword,
its ``--flags`` and its arguments (JSON form or words), and substitutes the
global ``ARG`` defaults into ``FROM`` lines, as BuildKit does.
"""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path

_VARIABLE = re.compile(r"\$\{(\w+)\}|\$(\w+)")


@dataclass(frozen=True, slots=True)
class Instruction:
    """One instruction: ``COPY --from=build /a /b`` is ("COPY", {"from": "build"}, ["/a", "/b"])."""

    keyword: str
    flags: dict[str, str]
    args: list[str]
    json_form: bool
    line: int


@dataclass(slots=True)
class Stage:
    """One ``FROM`` and the instructions under it."""

    base: str
    name: str
    instructions: list[Instruction] = field(default_factory=list)

    def all(self, keyword: str) -> list[Instruction]:
        """The instructions of this stage with ``keyword``, in order."""
        return [i for i in self.instructions if i.keyword == keyword]


@dataclass(slots=True)
class Dockerfile:
    """The global ``ARG`` defaults and the stages, the last one being the image."""

    path: Path
    global_args: dict[str, str]
    stages: list[Stage]

    @property
    def final(self) -> Stage:
        return self.stages[-1]


def logical_lines(text: str) -> list[tuple[int, str]]:
    """(first line number, text) of each instruction, continuations joined, comments gone."""
    lines: list[tuple[int, str]] = []
    pending: list[str] = []
    start = 0
    for number, raw in enumerate(text.splitlines(), start=1):
        stripped = raw.strip()
        if stripped.startswith("#") or not stripped:
            continue  # comments and blank lines may sit inside a continued instruction
        if not pending:
            start = number
        if stripped.endswith("\\"):
            pending.append(stripped[:-1].strip())
            continue
        pending.append(stripped)
        lines.append((start, " ".join(p for p in pending if p)))
        pending = []
    if pending:
        lines.append((start, " ".join(pending)))
    return lines


def parse_instruction(number: int, text: str) -> Instruction:
    """Split one logical line into keyword, ``--flags`` and arguments."""
    keyword, _, rest = text.partition(" ")
    rest = rest.strip()
    flags: dict[str, str] = {}
    while rest.startswith("--"):
        flag, _, rest = rest.partition(" ")
        name, _, value = flag[2:].partition("=")
        flags[name] = value
        rest = rest.strip()
    if rest.startswith("["):
        args = json.loads(rest)
        return Instruction(keyword.upper(), flags, [str(a) for a in args], True, number)
    return Instruction(keyword.upper(), flags, shlex.split(rest), False, number)


def substitute(text: str, variables: dict[str, str]) -> str:
    """``$NAME`` and ``${NAME}`` replaced by their values (unknown ones left as they are)."""
    return _VARIABLE.sub(lambda m: variables.get(m[1] or m[2], m[0]), text)


def parse(path: Path) -> Dockerfile:
    """Read ``path`` into global arguments and stages.

    Raises:
        ValueError: an instruction comes before the first ``FROM`` (other than ``ARG``).
    """
    global_args: dict[str, str] = {}
    stages: list[Stage] = []
    for number, text in logical_lines(path.read_text(encoding="utf-8")):
        instruction = parse_instruction(number, text)
        if instruction.keyword == "FROM":
            base = substitute(instruction.args[0], global_args)
            name = instruction.args[2] if len(instruction.args) > 2 else str(len(stages))
            stages.append(Stage(base, name))
        elif not stages:
            if instruction.keyword != "ARG":
                raise ValueError(f"{path}:{number}: {instruction.keyword} before FROM")
            key, _, value = instruction.args[0].partition("=")
            global_args[key] = value
        else:
            stages[-1].instructions.append(instruction)
    return Dockerfile(path, global_args, stages)


def ignore_rules(path: Path) -> list[tuple[bool, re.Pattern[str]]]:
    """A ``.dockerignore`` as (re-include?, pattern) pairs, in order."""
    rules = []
    for raw in path.read_text(encoding="utf-8").splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        negate = line.startswith("!")
        pattern = line.lstrip("!").strip().strip("/")
        rules.append((negate, re.compile(_glob_regex(pattern))))
    return rules


def sent_to_builder(relative: str, rules: list[tuple[bool, re.Pattern[str]]]) -> bool:
    """Whether the file at ``relative`` (to the context) reaches the builder.

    The last rule matching the path or one of its parent folders decides, as in
    Docker: excluding a folder excludes what is in it, ``!folder`` brings it back.
    """
    parts = relative.strip("/").split("/")
    prefixes = ["/".join(parts[: n + 1]) for n in range(len(parts))]
    sent = True
    for negate, pattern in rules:
        if any(pattern.fullmatch(prefix) for prefix in prefixes):
            sent = negate
    return sent


def _glob_regex(pattern: str) -> str:
    out = []
    index = 0
    while index < len(pattern):
        if pattern.startswith("**/", index):
            out.append("(?:.*/)?")
            index += 3
        elif pattern.startswith("**", index):
            out.append(".*")
            index += 2
        elif pattern[index] == "*":
            out.append("[^/]*")
            index += 1
        elif pattern[index] == "?":
            out.append("[^/]")
            index += 1
        else:
            out.append(re.escape(pattern[index]))
            index += 1
    return "".join(out)
