"""Every command in the README's and docs/' shell blocks runs as written from a fresh clone: the
executable it names is where it says, a make target exists, and each `adri` line parses with the
flags it gives (the parser `adri` itself runs). Failed before: `sparrow-decider serve` and
`jevcompat` were written bare (command not found outside an activated environment), and
docs/findings.md wrote `adri` bare."""

from __future__ import annotations

import re
import shlex
import sys
from pathlib import Path

import pytest

from adri_pipeline.cli import parsed

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
SHELL_BLOCK = re.compile(r"```(?:sh|bash|shell)\n(.*?)```", re.S)
# commands a reader's machine has, not this project's
SYSTEM = {"curl", "export", "cd", "jq", "sha256sum", "git", "python3", "kill", "docker"}


def commands(page: Path) -> list[tuple[int, str]]:
    """(line, command) of each command in a page's shell blocks: continuations joined, comments and
    a trailing `&` cut, `a && b` as two commands."""
    text = page.read_text(encoding="utf-8")
    out = []
    for block in SHELL_BLOCK.finditer(text):
        first_line = text[: block.start()].count("\n") + 2
        joined, start = "", None
        for offset, line in enumerate(block.group(1).splitlines()):
            start = first_line + offset if start is None else start
            code = re.sub(r"(^|\s)#.*$", "", line).rstrip()
            if code.endswith("\\"):
                joined += code[:-1] + " "
                continue
            joined += code
            for part in joined.split("&&"):
                part = part.strip().removesuffix("&").strip()
                if part:
                    out.append((start, part))
            joined, start = "", None
    return out


def make_targets() -> set[str]:
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    return set(re.findall(r"^([\w.-]+):", makefile, flags=re.M))


def problem(command: str) -> str | None:
    """What keeps `command` from running as written from the repository's root, or None."""
    words = shlex.split(command)
    while words and re.fullmatch(r"[A-Z_][A-Z0-9_]*=.*", words[0]):  # VAR=value before the command
        words = words[1:]
    if not words:
        return None
    executable, args = words[0], words[1:]
    if executable == "make":
        missing = [a for a in args if "=" not in a and a not in make_targets()]
        return f"no make target {missing}" if missing else None
    if executable in SYSTEM:
        return None
    if "/" not in executable:
        return f"{executable!r} is not on a fresh clone's PATH: write .venv/bin/{executable} (or make ...)"
    if executable == ".venv/bin/adri":
        try:
            parsed(args)
        except SystemExit as exc:  # argparse's refusal of a flag or a missing argument
            return f"adri refuses these arguments (exit {exc.code})"
        return None
    if executable.startswith(".venv/bin/"):  # a dependency's console script: installed beside python
        script = Path(sys.executable).parent / executable.removeprefix(".venv/bin/")
        return None if script.exists() else f"{executable} is not installed by make install"
    return None if (ROOT / executable).exists() else f"{executable} does not exist"


def test_the_reader_finds_commands_in_every_guide():
    found = {page.name for page in PAGES if commands(page)}
    assert {"README.md", "guide-classification.md", "guide-routing.md", "findings.md", "dagster.md"} <= found


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_command_in_the_docs_runs_as_written(page, monkeypatch, tmp_path):
    monkeypatch.chdir(ROOT)
    monkeypatch.setenv("ADRI_WAREHOUSE", str(tmp_path / "w.duckdb"))  # settings only: nothing is opened
    wrong = [
        f"{page.name}:{line}: {command}\n    {why}" for line, command in commands(page) if (why := problem(command))
    ]
    assert not wrong, "\n".join(wrong)


def test_a_command_that_would_fail_is_caught():
    assert "PATH" in problem("sparrow-decider serve --port 8000")
    assert "refuses" in problem(".venv/bin/adri findings --no-such-flag")
    assert "make target" in problem("make no-such-target")
    assert problem(".venv/bin/adri findings --by year") is None
    assert problem("ADRI_X=1 .venv/bin/adri routing run --dataset sample --runs 0") is None
