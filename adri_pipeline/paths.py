"""Every file, folder and name a user gives that becomes a path, checked the one way: before a command
runs (each path flag declares its kind in its `Flag`, adri_pipeline/flags.py) and again where a file
is written. An output never replaces an existing file unless asked (`--overwrite`), never replaces
what the project reads (the warehouse, its snapshot, a corpus, a codebook, the coders' file), and
is written whole or not at all: a temporary file in the same folder, renamed over the target. A name
that becomes a file (a round's) stays inside its folder."""

from __future__ import annotations

import os
import secrets
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path, PureWindowsPath

from adri_pipeline.errors import AdriError

# what a path flag holds (Flag.path): read a file; read a file or a folder; write a new file (an
# output); rewrite a file in place (its own markers, a gate configuration); the DuckDB warehouse,
# which a command may create
KINDS = ("file", "file-or-folder", "output", "edited", "store")
DUCKDB_MAGIC = b"DUCK"  # bytes 8-11 of every DuckDB database file


class PathRefused(AdriError, ValueError):
    """The message names the flag (or the name's role) and the path."""


def _missing_parent(path: Path) -> Path | None:
    """The first ancestor that is not a folder (missing, or a file), or None."""
    for folder in reversed(path.parents):
        if not folder.is_dir():
            return folder
    return None


def _writable(folder: Path) -> bool:
    """Whether a file can be created in `folder`, tried rather than asked: os.access says yes to root
    even where the file system says no."""
    try:
        with tempfile.NamedTemporaryFile(dir=folder, prefix=".adri-probe-"):
            return True
    except OSError:
        return False


def _readable(path: Path) -> str:
    try:
        with path.open("rb"):
            return ""
    except OSError as exc:
        return exc.strerror or type(exc).__name__


def check(kind: str, flag: str, path: Path) -> None:
    """`path` as flag `flag` of `kind` (KINDS) may be used, or a PathRefused in one line."""
    path = Path(path)
    if kind in ("file", "file-or-folder", "edited"):
        if not path.exists():
            parent = _missing_parent(path)
            why = f"{parent} is not a folder" if parent is not None and parent.exists() else "no such file"
            raise PathRefused(f"{flag} {path}: {why}")
        if path.is_dir() and kind != "file-or-folder":
            raise PathRefused(f"{flag} {path}: is a folder, not a file")
        if path.is_file() and (unreadable := _readable(path)):
            raise PathRefused(f"{flag} {path}: cannot be read ({unreadable})")
        if kind == "edited" and not _writable(path.parent):
            raise PathRefused(f"{flag} {path}: its folder {path.parent} is not writable")
        return
    if path.is_dir():
        raise PathRefused(f"{flag} {path}: is a folder, not a file")
    if kind == "store" and path.exists():
        return
    parent = _missing_parent(path)
    if parent is not None and (kind == "output" or parent.exists()):
        why = "is a file, not a folder" if parent.exists() else "does not exist"
        raise PathRefused(f"{flag} {path}: folder {parent} {why}")
    folder = path.parent if parent is None else next(p for p in path.parents if p.is_dir())
    if not _writable(folder):
        raise PathRefused(f"{flag} {path}: folder {folder} is not writable")


def _same(a: Path, b: Path) -> bool:
    try:
        return a.resolve() == b.resolve() or (a.exists() and b.exists() and a.samefile(b))
    except OSError:
        return False


def is_duckdb(path: Path) -> bool:
    try:
        with Path(path).open("rb") as handle:
            return handle.read(12)[8:12] == DUCKDB_MAGIC
    except OSError:
        return False


def read_by_the_project(settings) -> dict[Path, str]:
    """The files an output must never replace, whatever its flag: what each one is."""
    from adri_pipeline.warehouse import Warehouse

    named = {
        settings.warehouse: "the warehouse",
        Warehouse(settings.warehouse).snapshot_path: "the warehouse's snapshot",
        settings.corpus: "the corpus",
        settings.codebook: "the codebook",
        settings.coders: "the coders' file",
        settings.coders_corpus: "the coders' corpus",
        settings.holdout: "the reserved ids file",
        settings.mirror_config: "the gate configuration",
        settings.routing_prices: "the price table",
    }
    return {Path(path): what for path, what in named.items() if path is not None}


def what_it_is(path: Path, protected: dict[Path, str]) -> str | None:
    """Which file the project reads `path` is (one of `protected`, inside a corpus folder, or any
    DuckDB database), or None."""
    for known, what in protected.items():
        if _same(path, known):
            return what
        if known.is_dir() and path.resolve().is_relative_to(known.resolve()):
            return f"inside {what} folder {known}"
    return "a DuckDB database (a warehouse or its snapshot)" if is_duckdb(path) else None


def check_output(flag: str, path: Path, settings, overwrite: bool) -> Path:
    """An output file a user named: refused if it is what the project reads (never replaced), or if
    it exists and `overwrite` was not given; its folder checked (`check`)."""
    path = Path(path)
    check("output", flag, path)
    what = what_it_is(path, read_by_the_project(settings))
    if what is not None:
        raise PathRefused(f"{flag} {path}: that is {what}, never replaced by an output; name another file")
    if path.exists() and not overwrite:
        raise PathRefused(f"{flag} {path}: the file exists; give --overwrite (--sobrescrever) to replace it")
    return path


@contextmanager
def replacing(path: Path) -> Iterator[Path]:
    """A temporary path in `path`'s folder to write into; renamed over `path` when the block ends
    without an error, removed otherwise, so `path` is the old file or the whole new one, never half."""
    path = Path(path)
    # named, not created (mkstemp would make it 0600): the writer creates it with the user's umask
    temporary = path.with_name(f".{path.name}.{os.getpid()}-{secrets.token_hex(4)}.tmp")
    try:
        yield temporary
        os.replace(temporary, path)
    finally:
        temporary.unlink(missing_ok=True)


def write_text(path: Path, text: str) -> Path:
    """`text` (UTF-8) to `path`, whole or not at all (`replacing`)."""
    with replacing(path) as temporary:
        temporary.write_text(text, encoding="utf-8")
    return Path(path)


def file_name(name: str, role: str) -> str:
    """A name a user gave that becomes a file or folder name (a round's `<round>.ids`): refused when
    it could leave its folder (a path separator, `..`, an absolute path) or is empty."""
    if name.strip() in ("", ".", "..") or any(c in name for c in "/\\\0") or PureWindowsPath(name).drive:
        raise PathRefused(f"{role} {name!r}: a name, not a path (no '/', '\\', '..' or absolute path)")
    return name
