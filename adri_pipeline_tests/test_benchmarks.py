"""The benchmarks run only in `make bench-smoke` (CI's second step), so a name they import that the
package no longer has would surface only there, minutes in: importing each one here catches it in
`make test`. Importing runs no benchmark: each keeps its work under `if __name__ == "__main__"`."""

import importlib.util
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"
SCRIPTS = sorted(p for p in BENCHMARKS.rglob("*.py") if p.name != "__init__.py")


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: str(p.relative_to(BENCHMARKS)))
def test_benchmark_imports(script, monkeypatch):
    monkeypatch.syspath_prepend(str(script.parent))
    spec = importlib.util.spec_from_file_location(f"benchmark_{script.stem}", script)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert callable(getattr(module, "main", None)) or script.parent != BENCHMARKS, f"{script.name} has no main()"
