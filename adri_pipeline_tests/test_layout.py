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


def imported_test_modules(path: Path, package: str) -> list[str]:
    """The `test_*` modules a file imports, absolute or relative, whole or by name (`from . import test_x`;
    a `test_*` name taken from one of the tests' own modules counts too: pytest would collect it twice)."""
    import ast

    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [alias.name for alias in node.names if alias.name.rpartition(".")[2].startswith("test_")]
        elif isinstance(node, ast.ImportFrom):
            module = "." * node.level + (node.module or "")
            if module.rpartition(".")[2].startswith("test_"):
                found.append(module)
            elif node.level or (node.module or "").startswith(package):
                prefix = module if module.endswith(".") else module + "."
                found += [prefix + alias.name for alias in node.names if alias.name.startswith("test_")]
    return found


def test_no_module_of_the_tests_imports_a_test_module():
    """A helper two test files share lives in a folder's helpers.py (or a conftest fixture), not in one of
    the test files: a test module is there to be collected, and a helper kept in one is found by nobody
    looking for it and moves or breaks when that file's tests change (issue 58: test_freeze took `line` and
    `write` from test_canonical, screens.py took the browser from test_review)."""
    tests = Path(__file__).resolve().parent
    offenders = [
        f"{path.relative_to(tests.parent)} imports {module}"
        for path in sorted(tests.rglob("*.py"))
        for module in imported_test_modules(path, tests.name)
    ]
    assert not offenders, offenders
