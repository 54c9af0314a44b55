"""Every read path works on the context its entry point built: none reads the codebook file or opens a
warehouse of its own, so an asset computes on the one codebook its upstream recorded."""

import ast
from pathlib import Path

import adri_pipeline

PACKAGE = Path(adri_pipeline.__file__).resolve().parent
READ_SIDE = ("classification", "reports")
# where a run's world is built: the context itself, and the application module the entry points call
BUILDS_THE_CONTEXT = {"classification/context.py"}
LOADS_A_CONTEXT = {"classification/context.py", "classification/service.py"}


def _called_name(call: ast.Call) -> str:
    """`load_codebook`, `Warehouse` or `RunContext.load` for a call of one, however it was imported."""
    func = call.func
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        owner = func.value.id if isinstance(func.value, ast.Name) else ""
        return f"{owner}.{func.attr}" if owner == "RunContext" else func.attr
    return ""


def own_worlds() -> list[str]:
    """`module:line call` of each call, in the read side's modules, that builds what a context carries."""
    found = []
    for folder in READ_SIDE:
        for path in sorted((PACKAGE / folder).rglob("*.py")):
            module = path.relative_to(PACKAGE).as_posix()
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if not isinstance(node, ast.Call):
                    continue
                name = _called_name(node)
                if name in ("load_codebook", "Warehouse") and module not in BUILDS_THE_CONTEXT:
                    found.append(f"{module}:{node.lineno} {name}(")
                elif name == "RunContext.load" and module not in LOADS_A_CONTEXT:
                    found.append(f"{module}:{node.lineno} {name}(")
    return found


def test_no_read_path_opens_the_codebook_file_or_a_warehouse_of_its_own():
    """Failed before: findings, export, the rounds, agreement, the quality check and the review site each
    loaded the codebook YAML and opened a Warehouse, so an asset after prompt_signature used the file
    as it was now beside the codebook its upstream recorded."""
    assert not own_worlds(), own_worlds()
