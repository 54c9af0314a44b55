"""Agreement between a model's answers and human coders, per variable, measured as each type allows.

Coder CSV columns: doc_id, variable, value (list values joined with '|', booleans true/false), plus
optional `evidencia` and `note` (the project's sample: data/coders/pilot_coded.csv).

- enum / boolean: percent agreement and Cohen's kappa, with a confusion table;
- list: exact-set agreement and mean Jaccard (an empty set counts as {nao_informado});
- text (periodo): the coders write the period as the text gives it, so a model's wording never matches;
  what is compared is whether a period is informed at all (agreement and kappa on that).
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from adri_pipeline.classification.codebook import Codebook
from adri_pipeline.errors import AdriError

REQUIRED_COLUMNS = ("doc_id", "variable", "value")
NO_INFORMATION = "nao_informado"

AGREEMENT_SCHEMA = {"model": pl.String, "variable": pl.String, "measure": pl.String, "n": pl.Int64,
                    "agreement_pct": pl.Float64, "kappa": pl.Float64, "jaccard": pl.Float64}
MEASURES = {"enum": "value", "boolean": "value", "list": "set", "text": "informed or not"}


class CoderFileError(AdriError, ValueError):
    pass


def canonical(value) -> str:
    """One spelling per answer: lists sorted and joined with '|', booleans and values lowercased."""
    if isinstance(value, (list, tuple)):
        value = "|".join(str(v) for v in value)
    parts = sorted(p.strip().lower() for p in str(value).split("|") if p.strip())
    return "|".join(parts)


def _malformed_line(path: Path) -> str:
    """Where a CSV polars refused goes wrong: the line a bad record starts on, and why ("" if the
    standard reader finds nothing wrong)."""
    import csv

    start = 1
    try:
        with path.open(newline="", encoding="utf-8") as f:
            reader = csv.reader(f, strict=True)
            header = next(reader, [])
            start = reader.line_num + 1
            for row in reader:
                if len(row) != len(header):
                    return f"line {start}: {len(row)} fields where the header has {len(header)}"
                start = reader.line_num + 1
    except csv.Error as exc:
        return f"line {start}: {exc} (a quoted field not closed?)"
    except UnicodeDecodeError as exc:
        return f"byte {exc.start}: not UTF-8"
    return ""


def load_coder_labels(path: str | Path, codebook: Codebook) -> pl.DataFrame:
    """(doc_id, variable, value, evidencia) with values in canonical spelling (evidencia empty when the
    file has none); errors name the file and line."""
    path = Path(path)
    if not path.is_file():
        raise CoderFileError(f"{path}: coder file not found")
    try:
        frame = pl.read_csv(path, infer_schema_length=0)
    except (pl.exceptions.PolarsError, UnicodeDecodeError) as exc:
        where = _malformed_line(path)
        raise CoderFileError(f"{path}: {where or 'not a readable CSV'} ({str(exc).splitlines()[0]})") from None
    missing = [c for c in REQUIRED_COLUMNS if c not in frame.columns]
    if missing:
        raise CoderFileError(f"{path}: missing column(s) {missing} (need {', '.join(REQUIRED_COLUMNS)})")
    for line, (doc_id, variable, value) in enumerate(frame.select(REQUIRED_COLUMNS).iter_rows(), start=2):
        if not doc_id:
            raise CoderFileError(f"{path}: line {line}: empty doc_id")
        if variable not in codebook.variables:
            raise CoderFileError(f"{path}: line {line}: unknown variable {variable!r}")
        spec = codebook.variables[variable]
        allowed = [] if spec.type == "text" else spec.allowed_values()  # a text variable's value is free text
        unknown = [v for v in str(value or "").split("|") if allowed and v.strip() and v.strip() not in allowed
                   and v.strip().lower() not in allowed]
        if not (value or "").strip():
            short = _malformed_line(path)  # a line with fewer fields than the header reads as no value
            raise CoderFileError(f"{path}: {short}" if short.startswith(f"line {line}:") else
                                 f"{path}: line {line}: no value for {variable!r} (the codebook's values: "
                                 f"{', '.join(allowed) if allowed else 'non-empty text'})")
        if unknown:
            raise CoderFileError(f"{path}: line {line}: value {value!r} is not one of the codebook's values for "
                                 f"{variable!r} ({', '.join(allowed) if allowed else 'non-empty text'})")
    evidence = pl.col("evidencia").fill_null("") if "evidencia" in frame.columns else pl.lit("")
    return frame.select(*REQUIRED_COLUMNS, evidence.alias("evidencia")).with_columns(
        pl.col("value").map_elements(canonical, return_dtype=pl.String))


def _compared(value: str, kind: str) -> str:
    if kind == "text":
        return "nao_informado" if value == NO_INFORMATION else "informed"
    return value


def jaccard(first: str, second: str) -> float:
    a, b = set(first.split("|")) or {NO_INFORMATION}, set(second.split("|")) or {NO_INFORMATION}
    return len(a & b) / len(a | b)


def _kappa(human: list[str], predicted: list[str]) -> float:
    if len(set(human) | set(predicted)) < 2:
        return 1.0  # both always gave the same single answer
    from sklearn.metrics import cohen_kappa_score  # imported when measured: `adri classify` starts without it

    return float(cohen_kappa_score(human, predicted))


def agreement_table(results: pl.DataFrame, coders: pl.DataFrame, codebook: Codebook) -> pl.DataFrame:
    """One row per (model, variable) over the documents both answered: n, agreement, kappa (enum,
    boolean, text-informed), mean Jaccard (lists). `results` has model, doc_id, variable, value."""
    joined = _joined(results, coders)
    rows = []
    for (model, variable), group in joined.group_by("model", "variable", maintain_order=True):
        kind = codebook.variables[variable].type if variable in codebook.variables else "enum"
        predicted = [_compared(v, kind) for v in group["value"]]
        human = [_compared(v, kind) for v in group["value_coder"]]
        same = sum(p == h for p, h in zip(predicted, human))
        rows.append({
            "model": model, "variable": variable, "measure": MEASURES[kind], "n": len(predicted),
            "agreement_pct": round(100 * same / len(predicted), 1),
            "kappa": None if kind == "list" else round(_kappa(human, predicted), 3),
            "jaccard": round(sum(map(jaccard, predicted, human)) / len(predicted), 3) if kind == "list" else None,
        })
    return pl.DataFrame(rows, schema=AGREEMENT_SCHEMA)


def confusion_table(results: pl.DataFrame, coders: pl.DataFrame, codebook: Codebook, model: str,
                    variable: str) -> pl.DataFrame:
    """Enum, boolean, text: the coder's answer per row, the model's per column, document counts in the
    cells. List: per value, the documents where both, only the coder or only the model chose it."""
    kind = codebook.variables[variable].type
    group = _joined(results.filter(pl.col("model") == model), coders).filter(pl.col("variable") == variable)
    if kind == "list":
        chosen = [(set(h.split("|")), set(p.split("|"))) for p, h in zip(group["value"], group["value_coder"])]
        values = sorted(set().union(*(h | p for h, p in chosen))) if chosen else []
        return pl.DataFrame([{"value": v, "both": sum(v in h and v in p for h, p in chosen),
                              "coder_only": sum(v in h and v not in p for h, p in chosen),
                              "model_only": sum(v in p and v not in h for h, p in chosen)} for v in values],
                            schema={"value": pl.String, "both": pl.Int64, "coder_only": pl.Int64,
                                    "model_only": pl.Int64})
    pairs = [(_compared(h, kind), _compared(p, kind)) for p, h in zip(group["value"], group["value_coder"])]
    frame = pl.DataFrame(pairs, schema={"coder": pl.String, "model": pl.String}, orient="row")
    if frame.is_empty():
        return frame
    table = frame.pivot(on="model", index="coder", values="model", aggregate_function="len").fill_null(0)
    return table.select("coder", *sorted(c for c in table.columns if c != "coder")).sort("coder")


def _joined(results: pl.DataFrame, coders: pl.DataFrame) -> pl.DataFrame:
    model_values = results.select("model", "doc_id", "variable", "value").with_columns(
        pl.col("value").map_elements(canonical, return_dtype=pl.String))
    return model_values.join(coders.select("doc_id", "variable", "value"), on=["doc_id", "variable"],
                             suffix="_coder")
