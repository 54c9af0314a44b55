"""Agreement between a model's answers and human coders, per variable, measured as each type allows.

Coder CSV columns: doc_id, variable, value (list values joined with '|', booleans true/false), plus
optional `evidencia` and `note` (the project's sample: data/coders/pilot_coded.csv), and for a coding
round with several coders (`adri code pull` writes one) `coder`, `pass` (blind, review,
adjudication) and `round`. A file with a `coder` column is measured and trained on its gold
(classification/coding.py): the adjudicated value, else the value the blind coders agree on.

- enum / boolean: agreement (the share of documents, 0-1) and Cohen's kappa, with a confusion table;
- list: exact-set agreement and mean Jaccard (an empty set counts as {nao_informado});
- text (periodo): the coders write the period as the text gives it, so a model's wording never matches;
  what is compared is whether a period is informed at all (agreement and kappa on that).
"""

from __future__ import annotations

from itertools import combinations
from pathlib import Path

import polars as pl

from adri_pipeline.classification.codebook import Codebook
from adri_pipeline.classification.coding import BLIND, NO_CODER, PASSES, gold_codes
from adri_pipeline.errors import AdriError
from adri_pipeline.jev.metrics import krippendorff_alpha_nominal

REQUIRED_COLUMNS = ("doc_id", "variable", "value")
NO_INFORMATION = "nao_informado"

AGREEMENT_SCHEMA = {
    "model": pl.String,
    "variable": pl.String,
    "measure": pl.String,
    "n": pl.Int64,
    "agreement_share": pl.Float64,
    "kappa": pl.Float64,
    "jaccard": pl.Float64,
}
MEASURES = {"enum": "value", "boolean": "value", "list": "set", "text": "informed or not"}
CODER_AGREEMENT_SCHEMA = {
    "round": pl.String,
    "variable": pl.String,
    "measure": pl.String,
    "coders": pl.Int64,
    "n": pl.Int64,
    "agreement_share": pl.Float64,
    "kappa": pl.Float64,
    "alpha": pl.Float64,
}


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


def load_codes(path: str | Path, codebook: Codebook) -> pl.DataFrame:
    """Every code of the file: doc_id, variable, value (canonical spelling), evidencia (empty when the
    file has none), coder ("" without a `coder` column), pass ("blind" without one) and round. Errors
    name the file and line."""
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
        _check_code(path, line, codebook, doc_id, variable, value)
    if "pass" in frame.columns:
        for line, given in enumerate(frame["pass"], start=2):
            if given not in PASSES:
                raise CoderFileError(f"{path}: line {line}: pass {given!r} is not one of {', '.join(PASSES)}")
    if "coder" in frame.columns and frame["coder"].fill_null("").str.strip_chars().eq("").any():
        line = frame["coder"].fill_null("").str.strip_chars().eq("").arg_true()[0] + 2
        raise CoderFileError(f"{path}: line {line}: empty coder (a file with a coder column names every code's coder)")
    _refuse_repeated(path, frame)

    def column(name: str, default: str) -> pl.Expr:
        return pl.col(name).fill_null(default) if name in frame.columns else pl.lit(default)

    return frame.select(
        *REQUIRED_COLUMNS,
        column("evidencia", "").alias("evidencia"),
        column("coder", NO_CODER).alias("coder"),
        column("pass", BLIND).alias("pass"),
        column("round", "").alias("round"),
    ).with_columns(pl.col("value").map_elements(canonical, return_dtype=pl.String))


def _refuse_repeated(path: Path, frame: pl.DataFrame) -> None:
    """A coder codes a (document, variable) once per pass of a round: a second line would count twice
    in agreement and training (a pulled round keeps a coder's latest annotation, rounds.pull). The
    first repeat is named with the line it repeats; nothing is read from the file."""
    keys = [c for c in ("round", "pass", "coder") if c in frame.columns] + ["doc_id", "variable"]
    lines = frame.select(keys).with_row_index("line", offset=2)
    repeated = lines.filter(pl.struct(keys).is_first_distinct().not_())
    if repeated.is_empty():
        return
    row = repeated.row(0, named=True)
    first = lines.join(repeated.head(1).select(keys), on=keys, nulls_equal=True)["line"][0]
    coder = f"coder {row['coder']!r}" if row.get("coder") else "the file's coder"
    where = "".join(f", {c} {row[c]!r}" for c in ("round", "pass") if row.get(c))
    raise CoderFileError(
        f"{path}: line {row['line']}: {coder} coded document {row['doc_id']!r}, variable "
        f"{row['variable']!r}{where} again (line {first}); keep one of the two lines"
    )


def _check_code(path: Path, line: int, codebook: Codebook, doc_id, variable, value) -> None:
    if not doc_id:
        raise CoderFileError(f"{path}: line {line}: empty doc_id")
    if variable not in codebook.variables:
        raise CoderFileError(f"{path}: line {line}: unknown variable {variable!r}")
    spec = codebook.variables[variable]
    allowed = [] if spec.type == "text" else spec.allowed_values()  # a text variable's value is free text
    unknown = [
        v
        for v in str(value or "").split("|")
        if allowed and v.strip() and v.strip() not in allowed and v.strip().lower() not in allowed
    ]
    if not (value or "").strip():
        short = _malformed_line(path)  # a line with fewer fields than the header reads as no value
        raise CoderFileError(
            f"{path}: {short}"
            if short.startswith(f"line {line}:")
            else f"{path}: line {line}: no value for {variable!r} (the codebook's values: "
            f"{', '.join(allowed) if allowed else 'non-empty text'})"
        )
    if unknown:
        raise CoderFileError(
            f"{path}: line {line}: value {value!r} is not one of the codebook's values for "
            f"{variable!r} ({', '.join(allowed) if allowed else 'non-empty text'})"
        )


def reference_codes(codes: pl.DataFrame) -> pl.DataFrame:
    """(doc_id, variable, value, evidencia): what a model is measured and trained against. Without
    named coders, every row as written. With them, the gold of the latest round that has one."""
    if codes.is_empty() or (codes["coder"] == NO_CODER).all():
        return codes.select(*REQUIRED_COLUMNS, "evidencia")
    gold, _ = gold_codes(codes)
    latest = gold.unique(subset=["doc_id", "variable"], keep="last", maintain_order=True)
    return latest.select(*REQUIRED_COLUMNS, "evidencia")


def load_coder_labels(path: str | Path, codebook: Codebook) -> pl.DataFrame:
    """(doc_id, variable, value, evidencia) a model is compared with: `reference_codes` of the file."""
    return reference_codes(load_codes(path, codebook))


def compared_as(value: str, kind: str) -> str:
    if kind == "text":
        return "nao_informado" if value == NO_INFORMATION else "informed"
    return value


def jaccard(first: str, second: str) -> float:
    a, b = set(first.split("|")) or {NO_INFORMATION}, set(second.split("|")) or {NO_INFORMATION}
    return len(a & b) / len(a | b)


def cohen_kappa(human: list[str], predicted: list[str]) -> float:
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
        predicted = [compared_as(v, kind) for v in group["value"]]
        human = [compared_as(v, kind) for v in group["value_coder"]]
        same = sum(p == h for p, h in zip(predicted, human))
        rows.append(
            {
                "model": model,
                "variable": variable,
                "measure": MEASURES[kind],
                "n": len(predicted),
                "agreement_share": round(same / len(predicted), 3),
                "kappa": None if kind == "list" else round(cohen_kappa(human, predicted), 3),
                "jaccard": round(sum(map(jaccard, predicted, human)) / len(predicted), 3) if kind == "list" else None,
            }
        )
    return pl.DataFrame(rows, schema=AGREEMENT_SCHEMA)


def confusion_table(
    results: pl.DataFrame, coders: pl.DataFrame, codebook: Codebook, model: str, variable: str
) -> pl.DataFrame:
    """Enum, boolean, text: the coder's answer per row, the model's per column, document counts in the
    cells. List: per value, the documents where both, only the coder or only the model chose it."""
    kind = codebook.variables[variable].type
    group = _joined(results.filter(pl.col("model") == model), coders).filter(pl.col("variable") == variable)
    if kind == "list":
        chosen = [(set(h.split("|")), set(p.split("|"))) for p, h in zip(group["value"], group["value_coder"])]
        values = sorted(set().union(*(h | p for h, p in chosen))) if chosen else []
        return pl.DataFrame(
            [
                {
                    "value": v,
                    "both": sum(v in h and v in p for h, p in chosen),
                    "coder_only": sum(v in h and v not in p for h, p in chosen),
                    "model_only": sum(v in p and v not in h for h, p in chosen),
                }
                for v in values
            ],
            schema={"value": pl.String, "both": pl.Int64, "coder_only": pl.Int64, "model_only": pl.Int64},
        )
    pairs = [(compared_as(h, kind), compared_as(p, kind)) for p, h in zip(group["value"], group["value_coder"])]
    frame = pl.DataFrame(pairs, schema={"coder": pl.String, "model": pl.String}, orient="row")
    if frame.is_empty():
        return frame
    table = frame.pivot(on="model", index="coder", values="model", aggregate_function="len").fill_null(0)
    return table.select("coder", *sorted(c for c in table.columns if c != "coder")).sort("coder")


def _joined(results: pl.DataFrame, coders: pl.DataFrame) -> pl.DataFrame:
    model_values = results.select("model", "doc_id", "variable", "value").with_columns(
        pl.col("value").map_elements(canonical, return_dtype=pl.String)
    )
    return model_values.join(coders.select("doc_id", "variable", "value"), on=["doc_id", "variable"], suffix="_coder")


# -- a coding round: coder vs coder -----------------------------------------------------------------------


def _unit_values(group: pl.DataFrame, kind: str, coders: list[str]) -> list[list[str | None]]:
    """One list per document, one entry per coder (None where that coder gave no code)."""
    by_doc: dict[str, dict[str, str]] = {}
    for doc_id, coder, value in group.select("doc_id", "coder", "value").iter_rows():
        by_doc.setdefault(doc_id, {})[coder] = compared_as(value, kind)
    return [[values.get(coder) for coder in coders] for values in by_doc.values()]


def coder_agreement(codes: pl.DataFrame, codebook: Codebook) -> pl.DataFrame:
    """Coder vs coder on the blind pass, one row per (round, variable), over the documents at least
    two coders coded. agreement_share is the share of those documents (0-1) where every coder gave the
    same answer. kappa is Cohen's kappa (sklearn) for two coders; for more coders it is the mean over pairs
    (Light's kappa). alpha is Krippendorff's alpha, nominal level (the `krippendorff` package). It
    takes any number of coders and missing codes. A list variable's answer is its set, compared as
    one nominal value. A text variable compares informed vs not informed, as `adri agree` does for the
    model."""
    blind = codes.filter(pl.col("pass") == BLIND)
    rows = []
    for (round_name, variable), group in blind.group_by("round", "variable", maintain_order=True):
        kind = codebook.variables[variable].type if variable in codebook.variables else "enum"
        coders = sorted(set(group["coder"]))
        units = [unit for unit in _unit_values(group, kind, coders) if sum(v is not None for v in unit) >= 2]
        if len(coders) < 2 or not units:
            continue
        same = sum(len({v for v in unit if v is not None}) == 1 for unit in units)
        kappas = []
        for first, second in combinations(range(len(coders)), 2):
            pairs = [
                (unit[first], unit[second]) for unit in units if unit[first] is not None and unit[second] is not None
            ]
            if pairs:
                kappas.append(cohen_kappa([a for a, _ in pairs], [b for _, b in pairs]))
        alpha = krippendorff_alpha_nominal(units)
        rows.append(
            {
                "round": round_name,
                "variable": variable,
                "measure": MEASURES[kind],
                "coders": len(coders),
                "n": len(units),
                "agreement_share": round(same / len(units), 3),
                "kappa": round(sum(kappas) / len(kappas), 3) if kappas else None,
                "alpha": None if alpha != alpha else round(alpha, 3),
            }
        )
    return pl.DataFrame(rows, schema=CODER_AGREEMENT_SCHEMA)
