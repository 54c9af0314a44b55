"""The top level the design card lists: codebooks/, contracts/ and data/ beside the package, read from
there in a checkout (the wheel carries copies made at build time: test_install.py)."""

from pathlib import Path

from adri_pipeline.config import CODEBOOKS, CONTRACTS, DATA, PILOT_CODEBOOK, PROJECT_ROOT, SAMPLE_CORPUS
from adri_pipeline.jev.contract import SCHEMAS


def test_the_checkout_reads_codebooks_contracts_and_data_from_the_top_level():
    """What the settings read is a file of the checkout's top level, not a copy inside the package."""
    for folder, path in (
        (CODEBOOKS, PILOT_CODEBOOK),
        (CONTRACTS, SCHEMAS / "request.schema.json"),
        (DATA, SAMPLE_CORPUS),
    ):
        assert path.is_file() and path.is_relative_to(folder), path
        assert folder.parent == PROJECT_ROOT and not folder.is_relative_to(PROJECT_ROOT / "adri_pipeline"), folder
    assert not (PROJECT_ROOT / "adri_pipeline" / "bundled" / "codebooks").exists()  # one copy, not two kept by hand


def test_no_function_in_the_repository_runs_over_50_lines():
    """A function the next engineer can read in one screen, in the package, its tests, the loopback servers
    and the benchmarks alike, as ruff format lays it out (build_parser was 149 lines, classify_corpus 133;
    with the bound at 60 over the package alone, 18 functions of the four trees were over 50 and 53 once
    formatted, the longest the loopback model server's __init__ at 137)."""
    import ast

    root = Path(__file__).resolve().parent.parent
    long = [
        (f"{path.relative_to(root)}:{node.lineno}", node.name, node.end_lineno - node.lineno + 1)
        for tree in ("adri_pipeline", "adri_pipeline_tests", "loopback", "benchmarks")
        for path in (root / tree).rglob("*.py")
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.end_lineno - node.lineno + 1 > 50
    ]
    assert not long, long
