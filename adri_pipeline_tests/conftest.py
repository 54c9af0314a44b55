from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from adri_pipeline.classification.codebook import load_codebook
from adri_pipeline.classification.corpus import load_corpus
from adri_pipeline.config import PILOT_CODEBOOK, SAMPLE_CORPUS, SHARED_DATA
from adri_pipeline.warehouse import Warehouse
from loopback.fakes import answer_from_request
from loopback.model_server import ModelServerStub

PILOT = PILOT_CODEBOOK
SAMPLE = SAMPLE_CORPUS


SLOW_TESTS = Path(__file__).with_name("slow_tests.tsv")


def slow_by_measurement() -> set[str]:
    """The node ids slow_tests.tsv lists (measured at 3 s or more): the front door's 4-minute budget."""
    lines = SLOW_TESTS.read_text(encoding="utf-8").splitlines()
    return {line.split("\t", 1)[1] for line in lines if line and not line.startswith("#")}


def pytest_collection_modifyitems(config, items):
    listed = slow_by_measurement()
    for item in items:
        if item.nodeid in listed:
            item.add_marker(pytest.mark.slow)


@pytest.fixture
def pilot():
    return load_codebook(PILOT)


@pytest.fixture
def sample_corpus():
    return load_corpus(SAMPLE)


@pytest.fixture
def warehouse(tmp_path) -> Warehouse:
    return Warehouse(tmp_path / "wh" / "adri.duckdb")


@pytest.fixture
def codebook_copy(tmp_path) -> Path:
    path = tmp_path / "codebook.yaml"
    shutil.copy(PILOT, path)
    return path


@pytest.fixture
def ollama_stub():
    with ModelServerStub(responder=answer_from_request) as stub:
        yield stub


def shared(relative: str) -> Path:
    path = SHARED_DATA / relative
    if not path.exists():
        pytest.skip(f"{path} not present (real data lives in ../shared/data)")
    return path


@pytest.fixture
def dagster_instance():
    import dagster as dg

    with dg.instance_for_test() as instance:
        yield instance


@pytest.fixture
def adri(tmp_path, codebook_copy):
    from adri_pipeline.defs.resources import AdriSettings

    return AdriSettings(
        warehouse=str(tmp_path / "wh" / "adri.duckdb"),
        corpus=str(SAMPLE),
        codebook=str(codebook_copy),
        backend="embedded",
    )


def adri_with(adri, **changes):
    """`adri` with some settings changed, as a new resource: a `model_copy`'s changes never reach a run
    (Dagster builds the run's resource from the configuration given at construction), so the whole-graph
    test ran with the default routing settings, not the demo's it asked for."""
    from adri_pipeline.defs.resources import AdriSettings

    return AdriSettings(**{**adri.model_dump(exclude_unset=True), **changes})


@pytest.fixture(scope="module")
def llama_on_loopback():
    """Gemma 3 270M on llama.cpp's llama-server (`make llm`), on loopback, for a test module: (the
    server's root URL, the model alias). Skipped where `make llm` has not run."""
    llama_server = pytest.importorskip("adri_pipeline.models.llama_server")
    try:
        llama_server.binary(), llama_server.model_file()
    except llama_server.LlamaServerMissing as exc:
        pytest.skip(str(exc))
    from loopback.systemone_servers import free_port

    port = free_port()
    process = llama_server.start(port=port, slots=2)
    yield f"http://127.0.0.1:{port}", llama_server.ALIAS
    llama_server.stop(process)


@pytest.fixture(scope="session")
def postgres_server():
    """One real PostgreSQL server per test process, on a loopback port (skips when not installed)."""
    from loopback.postgres_server import start_postgres

    server = start_postgres()
    yield server
    server.stop()


@pytest.fixture
def ledger_url(postgres_server) -> str:
    """A fresh database on the loopback PostgreSQL server: the shared ledger's URL."""
    return postgres_server.url(postgres_server.new_database())


@pytest.fixture
def stop_handlers():
    """The CLI's Ctrl+C/SIGTERM handlers for one test, then pytest's own back."""
    import signal

    from adri_pipeline.stopping import install_stop_handlers, one_stop

    saved = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    install_stop_handlers()
    yield
    with one_stop():  # a run that ends unstopped: a test's stopped run leaves no "stopping" behind
        pass
    for s, handler in saved.items():
        signal.signal(s, handler)


def table_rows(path) -> dict[str, int]:
    """Rows per base table of a DuckDB file (the warehouse or its snapshot), read-only."""
    import duckdb

    with duckdb.connect(str(path), read_only=True) as con:
        tables = [
            t
            for (t,) in con.execute(
                "SELECT table_name FROM information_schema.tables WHERE table_type = 'BASE TABLE'"
            ).fetchall()
        ]
        return {t: con.execute(f'SELECT count(*) FROM "{t}"').fetchone()[0] for t in tables}
