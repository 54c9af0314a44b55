"""A real PostgreSQL server on a loopback port, for the shared ledger and the Dagster instance tests:
initdb into a temporary folder, pg_ctl start, a fresh database per test. Skips when the server's
binaries are not installed (Debian's postgresql; .ci/run installs it)."""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import tempfile
import uuid
from dataclasses import dataclass
from pathlib import Path

import pytest

from loopback.systemone_servers import free_port


def _binaries() -> str | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin")) or (
        [str(Path(shutil.which("initdb")).parent)] if shutil.which("initdb") else []
    )
    return found[-1] if found else None


def _as_postgres(*command: str) -> subprocess.CompletedProcess:
    runner = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
    return subprocess.run([*runner, *command], check=True, capture_output=True, text=True, timeout=120)


@dataclass
class PostgresServer:
    bin: str
    port: int
    folder: Path

    def url(self, database: str) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{database}"

    def new_database(self, prefix: str = "adri") -> str:
        name = f"{prefix}_{uuid.uuid4().hex[:10]}"
        _as_postgres(f"{self.bin}/createdb", "-h", "127.0.0.1", "-p", str(self.port), "-U", "postgres", name)
        return name

    def stop(self) -> None:
        _as_postgres(f"{self.bin}/pg_ctl", "-D", str(self.folder / "data"), "-m", "immediate", "stop")
        shutil.rmtree(self.folder, ignore_errors=True)


def start_postgres() -> PostgresServer:
    binaries = _binaries()
    if binaries is None:
        pytest.skip("PostgreSQL server not installed (Debian package postgresql; .ci/run installs it)")
    folder = Path(tempfile.mkdtemp(prefix="adri-pg-"))  # the server's user must reach it (pytest's is root-only)
    if os.geteuid() == 0:
        shutil.chown(folder, "postgres")
    port = free_port()
    _as_postgres(f"{binaries}/initdb", "-D", str(folder / "data"), "--auth=trust", "-U", "postgres")
    _as_postgres(
        f"{binaries}/pg_ctl",
        "-D",
        str(folder / "data"),
        "-w",
        "-l",
        str(folder / "log"),
        "-o",
        f"-p {port} -c listen_addresses=127.0.0.1 -k {folder} -c max_connections=200",
        "start",
    )
    return PostgresServer(binaries, port, folder)
