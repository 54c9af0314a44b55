"""Every path flag of every command, walked from the CLI's own parser, given a bad path: a missing
file, a folder, a path under a file or an unwritable folder. Each must end with a non-zero exit and
one line naming the flag and the path, before the command does anything, and no traceback."""

from __future__ import annotations

import argparse
import functools
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from adri_pipeline.cli import COMMANDS, build_parser, main
from adri_pipeline.config import Settings
from adri_pipeline.flags import _plain, flag_of
from adri_pipeline_tests.conftest import SAMPLE

# the flags that write a file the user names: what the test knows besides the declarations
WRITERS = {("code", "out"), ("findings", "labels"), ("export", "output"), ("mirror", "blind_sheet")}
WRITTEN_BY_ACTION = {("mirror", "replay", "mirror_log")}
SECONDS_PER_CASE = 60  # a command that runs instead of refusing its path is a failure, not a hang


@functools.cache
def _parser() -> argparse.ArgumentParser:
    return build_parser()


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    found = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(found[0].choices) if found else {}


def _kind(command: str, action: str | None, name: str, field) -> str:
    if (command, name) in WRITERS or (command, action, name) in WRITTEN_BY_ACTION:
        return "output"
    return getattr(flag_of(field), "path", "") or "file"


def path_flags() -> list[tuple[str, str | None, str, str, str]]:
    """(command, action, flag, field, kind) of every option of type Path on every command."""
    found = []
    for name, command_parser in _subparsers(_parser()).items():
        spec = command_parser.get_default("command_spec")
        if spec.name != name:  # a Portuguese alias of a command already walked
            continue
        for action, parser in (_subparsers(command_parser) or {None: command_parser}).items():
            for argument in parser._actions:
                field = spec.options.model_fields.get(argument.dest) or Settings.model_fields.get(argument.dest)
                if argument.option_strings and field is not None and _plain(field.annotation) is Path:
                    found.append(
                        (
                            spec.name,
                            action,
                            argument.option_strings[0],
                            argument.dest,
                            _kind(spec.name, action, argument.dest, field),
                        )
                    )
    return found


def unwritable_folder(tmp_path: Path) -> Path:
    """A folder no file can be created in: /sys for root (os.access says yes, the kernel says no)."""
    if os.geteuid() == 0:
        return Path("/sys")
    folder = tmp_path / "read-only"
    folder.mkdir()
    folder.chmod(0o555)
    return folder


def bad_paths(kind: str, tmp_path: Path) -> dict[str, Path]:
    (tmp_path / "a-file.txt").write_text("x\n")
    (tmp_path / "exists.csv").write_text("kept\n")
    under_a_file = tmp_path / "a-file.txt" / "x.csv"
    if kind == "output":
        return {
            "missing folder": tmp_path / "no-such-folder" / "out.csv",
            "folder": tmp_path,
            "unwritable": unwritable_folder(tmp_path) / "out.csv",
            "exists": tmp_path / "exists.csv",
        }
    if kind == "store":
        return {
            "folder": tmp_path,
            "under a file": under_a_file,
            "unwritable": unwritable_folder(tmp_path) / "w.duckdb",
        }
    cases = {"missing": tmp_path / "no-such-file.txt", "under a file": under_a_file}
    return cases if kind == "file-or-folder" else cases | {"folder": tmp_path}


def argv_for(command: str, action: str | None, flag: str, bad: Path, tmp_path: Path) -> list[str]:
    """The command with valid values for what it requires, every other path flag left as the user's
    default, and `flag` given `bad`."""
    argv = [command] + ([action] if action else [])
    needs = {
        "classify": ["--corpus", str(SAMPLE)],
        "register": ["--corpus", str(SAMPLE)],
        "export": ["--format", "csv", "--output", str(tmp_path / "export.csv")],
        "code": ["--round", "r1"],
    }
    argv += needs.get(command, []) + (["page_type"] if (command, action) == ("mirror", "approve") else [])
    parser = _subparsers(_parser())[command]
    parser = _subparsers(parser).get(action, parser)
    if flag != "--warehouse" and any("--warehouse" in a.option_strings for a in parser._actions):
        argv += ["--warehouse", str(tmp_path / "w.duckdb")]  # never the checkout's data/warehouse
    if flag in argv:
        at = argv.index(flag)
        del argv[at : at + 2]
    return argv + [flag, str(bad)]


def _timed_out(signum, frame):
    raise TimeoutError(f"still running after {SECONDS_PER_CASE} s: the command ran instead of refusing its path")


CASES = [(c, a, f, d, k) for c, a, f, d, k in path_flags()]


@pytest.mark.parametrize("command,action,flag,dest,kind", CASES, ids=[f"{c}-{a or ''}-{f}" for c, a, f, _, _ in CASES])
def test_a_bad_path_is_one_line_naming_the_flag(
    command, action, flag, dest, kind, tmp_path, capsys, monkeypatch, stop_handlers
):
    monkeypatch.chdir(tmp_path)
    previous = signal.signal(signal.SIGALRM, _timed_out)
    failures = []
    try:
        for case, bad in bad_paths(kind, tmp_path).items():
            argv = argv_for(command, action, flag, bad, tmp_path)
            signal.alarm(SECONDS_PER_CASE)
            try:
                code = main(argv)
            except SystemExit as exc:
                code = exc.code
            finally:
                signal.alarm(0)
            err = capsys.readouterr().err.strip()
            lines = err.splitlines()
            if code in (0, None) or len(lines) != 1 or flag not in err or str(bad) not in err or "Traceback" in err:
                failures.append(f"{case}: adri {' '.join(argv)} -> exit {code}, stderr {err[-300:]!r}")
    finally:
        signal.signal(signal.SIGALRM, previous)
    assert not failures, "\n".join(failures)
    assert (tmp_path / "exists.csv").read_text() == "kept\n"


def test_every_path_flag_declares_its_kind():
    """A new path flag without a kind would go unchecked; the writers are outputs (WRITERS above)."""
    options = {c.name: c.options for c in COMMANDS}
    for command, _, flag, dest, _ in CASES:
        field = options[command].model_fields.get(dest) or Settings.model_fields[dest]
        declared = flag_of(field).path
        assert declared, f"adri {command} {flag}: no path kind declared (Flag(path=...))"
        if (command, dest) in WRITERS:
            assert declared == "output", f"adri {command} {flag} writes the file it names: declare path='output'"


@pytest.mark.parametrize(
    "argv,flag",
    [
        (["mirror", "evaluate", "--log", "{tmp}"], "--log"),
        (["mirror", "savings", "--log", "{tmp}/missing.jsonl"], "--log"),
        (["findings", "--labels", "{tmp}/no-such-folder/labels.csv"], "--labels"),
    ],
)
def test_the_installed_command_says_one_line(argv, flag, tmp_path):
    """The same through a real process: what a user's terminal shows."""
    argv = [a.replace("{tmp}", str(tmp_path)) for a in argv] + ["--warehouse", str(tmp_path / "w.duckdb")]
    done = subprocess.run(
        [sys.executable, "-m", "adri_pipeline.cli", *argv], capture_output=True, text=True, timeout=300, cwd=tmp_path
    )
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    [line] = done.stderr.strip().splitlines()
    assert line.startswith(f"error: {flag} "), line
