"""Review pages: a static HTML site, opened from disk, that lets researchers check the model's work
and read what the corpus says.

ADR 0011 classifies so that the panel can "destacar a evidência no resumo que o painel mostra" and
so that models can be compared with human coders. The site answers:

- index.html        what is here, and what each page answers
- findings.html     what the corpus says: per variable the shares with 95 % intervals, by year and by
                    source, one variable against another, two answer sets side by side
- documents-*.html  per (model, codebook): every document's title and abstract with each variable's
                    evidence highlighted in place from the stored offsets, coloured by audit status
- compare-*.html    two models (or a model and the coders' file) on the same documents, disagreements first
- summary.html      the ADR's figures per (model, codebook) with a bar chart per variable
- routing.html      the routing benchmark report(s); mirror.html the mirror evaluation(s)

Pages are Jinja2 templates (`templates/`) with autoescape on: all corpus text is escaped, and the
bidirectional-text controls an abstract may carry (U+202A-202E, U+2066-2069) are isolated so they
cannot reorder the page around them. Highlights are rendered here, not by script, so the page is
checkable by parsing: every <mark> carries the [start, end) of its segment in its field and the
variables whose evidence covers it. 5,000 documents stay responsive: documents are shown 50 at a time
and off-screen ones are skipped by the browser (`content-visibility: auto`).
"""

from __future__ import annotations

import json
import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import jinja2
import polars as pl
from markupsafe import Markup, escape

from adri_pipeline.classification.backends.base import ZERO_SHOT_NOTE
from adri_pipeline.classification.codebook import Codebook
from adri_pipeline.classification.context import RunContext
from adri_pipeline.classification.findings import percent
from adri_pipeline.classification.queries import Findings
from adri_pipeline.mirror.results import MirrorReport
from adri_pipeline.reports.findings_text import (
    CORRECTED_MEANING,
    ESTIMATES,
    difference_text,
    group_cells,
    interval_text,
    plan_text,
    points_text,
)
from adri_pipeline.routing.results import BenchmarkReport
from adri_pipeline.warehouse import (
    Warehouse,
    read_documents,
    read_figures,
    read_mirror_evaluations,
    read_results,
    result_sets,
)

STATUS_ORDER = {"absent": 3, "approximate": 2, "literal": 1, "waived": 0}
PAGE_SIZE = 50
BIDI_CONTROLS = re.compile("[\u202a-\u202e\u2066-\u2069]")


@dataclass
class Site:
    index: Path
    pages: list[Path]


def slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "-", text).strip("-").lower()[:60]


def isolated(value) -> Markup:
    """`value` escaped, each bidirectional control character in an isolating span of its own (the
    character stays, so offsets and copied text are unchanged; its effect ends with the span)."""
    text = str(escape("" if value is None else value))
    return Markup(
        BIDI_CONTROLS.sub(lambda m: f'<span class="bidi" title="U+{ord(m.group()):04X}">{m.group()}</span>', text)
    )


def _finalize(value):
    """Every {{ expression }}: None prints empty; text with bidi controls comes out isolated."""
    if value is None:
        return ""
    if isinstance(value, str) and not isinstance(value, Markup) and BIDI_CONTROLS.search(value):
        return isolated(value)
    return value


def _fmt(value, column: str = ""):
    """A table cell as people read it; a share (a `*_share` column, 0-1) as a percentage."""
    if isinstance(value, bool) or value is None:
        return value
    if column.endswith("_share") and isinstance(value, (int, float)):
        return percent(value)
    if isinstance(value, float):
        return "—" if value != value else f"{value:.3f}" if abs(value) < 10 else f"{value:.1f}"
    if isinstance(value, (list, dict)):
        return json.dumps(value, ensure_ascii=False, default=str)
    return value


TEMPLATES = jinja2.Environment(
    loader=jinja2.PackageLoader("adri_pipeline.reports", "templates"),
    autoescape=True,
    finalize=_finalize,
    undefined=jinja2.StrictUndefined,
)
TEMPLATES.filters["fmt"] = _fmt


def render(template: str, **context) -> str:
    return TEMPLATES.get_template(template).render(**context)


# -- highlighting ----------------------------------------------------------------------------


def highlight(text: str, spans: list[tuple[int, int, str, str]]) -> Markup:
    """`text` escaped, with each [start, end) of `spans` (start, end, variable, status) marked.
    Overlapping quotes are split at every boundary; each <mark> names its segment and variables."""
    text = text or ""
    cuts = sorted({0, len(text), *(s for s, _, _, _ in spans), *(e for _, e, _, _ in spans)})
    out = []
    for start, end in zip(cuts, cuts[1:]):
        covering = [(v, st) for s, e, v, st in spans if s <= start and end <= e]
        piece = isolated(text[start:end])
        if not covering:
            out.append(piece)
            continue
        status = max((st for _, st in covering), key=lambda st: STATUS_ORDER.get(st, 0))
        variables = " ".join(sorted({v for v, _ in covering}))
        out.append(
            Markup('<mark class="ev {}" data-start="{}" data-end="{}" data-vars="{}" title="{}">{}</mark>').format(
                status, start, end, variables, variables, piece
            )
        )
    return Markup("").join(out)


def _spans(values: pl.DataFrame, field: str) -> list[tuple[int, int, str, str]]:
    rows = values.filter(
        (pl.col("evidence_field").fill_null("abstract") == field) & pl.col("evidence_start").is_not_null()
    )
    return [
        (r["evidence_start"], r["evidence_end"], r["variable"], r["audit_status"]) for r in rows.iter_rows(named=True)
    ]


# -- documents -------------------------------------------------------------------------------


def where_quoted(field: str | None, start: int | None, end: int | None) -> str:
    """Where a quote sits, as a reader counts: characters from 1, both ends included ("abstract,
    characters 13–40"); the stored offsets are half-open from 0 ([12, 40)), which the page's marks
    carry in their data attributes for whoever checks them."""
    if start is None:
        return "—"
    return f"{field or 'abstract'}, characters {start + 1}–{end}"


def _document(doc: dict, values: pl.DataFrame) -> dict:
    answers = [
        {**r, "where": where_quoted(r["evidence_field"], r["evidence_start"], r["evidence_end"])}
        for r in values.iter_rows(named=True)
    ]
    # the corpus file by its name: a page is shared, the folders of whoever ran it are not its business
    source = Path(doc["source"]).name if doc.get("source") else None
    return {
        "doc_id": doc["doc_id"],
        "source": source,
        "title_plain": doc["title"] or "",
        "title": highlight(doc["title"] or "", _spans(values, "title")),
        "abstract": highlight(doc["abstract"] or "", _spans(values, "abstract")),
        "answers": answers,
    }


def documents_page(warehouse: Warehouse, codebook: Codebook, model: str) -> str:
    values, _, _ = read_results(warehouse, model, codebook.content_hash)
    doc_ids = values["doc_id"].unique(maintain_order=True).to_list()
    documents = read_documents(warehouse, sorted(doc_ids))
    by_doc = {k[0]: g for k, g in values.group_by("doc_id")}
    value_set = sorted({v for joined in values["value"].to_list() for v in str(joined).split("|")})
    return render(
        "documents.html.j2",
        title=f"Documents — {model} × {codebook.name} v{codebook.version}",
        documents=[_document(d, by_doc[d["doc_id"]]) for d in documents.iter_rows(named=True)],
        variables=list(codebook.variables),
        value_set=value_set,
        page_size=PAGE_SIZE,
    )


# -- compare ---------------------------------------------------------------------------------


def disagreements(a: pl.DataFrame, b: pl.DataFrame) -> pl.DataFrame:
    """(doc_id, variable) pairs both sides answered with different values (lists as sets)."""

    def canonical(frame):
        return frame.with_columns(
            pl.col("value")
            .map_elements(
                lambda v: "|".join(sorted(p.strip().lower() for p in str(v).split("|") if p.strip())),
                return_dtype=pl.String,
            )
            .alias("_canon")
        )

    joined = canonical(a).join(canonical(b), on=["doc_id", "variable"], suffix="_b")
    return joined.filter(pl.col("_canon") != pl.col("_canon_b")).sort("doc_id", "variable")


def _compared_side(row: dict, document: dict, suffix: str) -> dict:
    """One side of a disagreement (`suffix` "" the left run, "_b" the right): its label, and its quote
    highlighted where the audit found it in the document."""
    label = row.get(f"label{suffix}") or row[f"value{suffix}"]
    if row.get(f"evidence_start{suffix}") is None:
        return {"label": label, "field": None, "quote": row.get(f"evidencia{suffix}") or "—"}
    field = row.get(f"evidence_field{suffix}") or "abstract"
    span = (
        row[f"evidence_start{suffix}"],
        row[f"evidence_end{suffix}"],
        row["variable"],
        row.get(f"audit_status{suffix}"),
    )
    return {"label": label, "field": field, "quote": highlight(document.get(field) or "", [span])}


def compare_page(
    warehouse: Warehouse, codebook: Codebook, left: tuple[str, pl.DataFrame], right: tuple[str, pl.DataFrame]
) -> str:
    (left_name, a), (right_name, b) = left, right
    differ = disagreements(a, b)
    common = a.join(b, on=["doc_id", "variable"]).height
    documents = {
        d["doc_id"]: d for d in read_documents(warehouse, differ["doc_id"].unique().to_list()).iter_rows(named=True)
    }
    rows = []
    for r in differ.iter_rows(named=True):
        doc = documents.get(r["doc_id"], {"title": "", "abstract": ""})
        rows.append(
            {
                "doc_id": r["doc_id"],
                "title": doc.get("title"),
                "variable": r["variable"],
                "sides": [_compared_side(r, doc, ""), _compared_side(r, doc, "_b")],
            }
        )
    return render(
        "compare.html.j2",
        title=f"Compare — {left_name} vs {right_name}",
        rows=rows,
        common=common,
        left=left_name,
        right=right_name,
    )


def coder_values(path: Path, codebook: Codebook) -> pl.DataFrame:
    """The coders' file in the shape of `classification_values` (no offsets unless it has them)."""
    from adri_pipeline.classification.agreement import load_coder_labels

    coded = load_coder_labels(path, codebook)
    return coded.with_columns(
        pl.col("value").alias("label"),
        pl.lit(None, pl.String).alias("audit_status"),
        pl.lit(None, pl.String).alias("evidence_field"),
        pl.lit(None, pl.Int32).alias("evidence_start"),
        pl.lit(None, pl.Int32).alias("evidence_end"),
    )


# -- findings --------------------------------------------------------------------------------

CHART_WIDTH, LABEL_WIDTH, TREND_COLOURS = (
    360,
    200,
    ("#4a78a8", "#d9822b", "#5a9e4b", "#b5485d", "#7d62a8", "#8c6d31", "#3f9ea3", "#999999"),
)


def share_chart(rows: list[dict], title: str) -> dict:
    """Horizontal bars, one per value: width the share, a whisker for its 95 % interval."""
    bars = [
        {
            "y": 4 + 22 * i,
            "label": r["label"][:32],
            "value": r["value"],
            "documents": r["documents"],
            "share": round(r["share"], 6),
            "percent": percent(r["share"]),
            "width": round(CHART_WIDTH * r["share"], 1),
            "low": round(LABEL_WIDTH + CHART_WIDTH * r["low"], 1),
            "high": round(LABEL_WIDTH + CHART_WIDTH * r["high"], 1),
        }
        for i, r in enumerate(rows)
    ]
    return {
        "title": title,
        "bars": bars,
        "left": LABEL_WIDTH,
        "scale": CHART_WIDTH,
        "width": LABEL_WIDTH + CHART_WIDTH + 110,
        "height": 8 + 22 * len(rows),
    }


def trend_chart(by_year: pl.DataFrame, title: str) -> dict | None:
    """One line per value across years (its share of that year's documents); None with fewer than two years."""
    years = sorted(by_year["year"].unique().to_list(), key=lambda y: (not y.isdigit(), y))
    if len(years) < 2:
        return None
    left, right, top, bottom = 40, 440, 8, 150
    x = {year: left + (right - left) * i / (len(years) - 1) for i, year in enumerate(years)}
    step = max(1, len(years) // 8)
    lines = []
    for i, ((value, label), part) in enumerate(by_year.group_by("value", "label", maintain_order=True)):
        share = dict(zip(part["year"], part["share"]))
        points = " ".join(f"{x[y]:.1f},{bottom - (bottom - top) * share.get(y, 0.0):.1f}" for y in years)
        lines.append(
            {"value": value, "label": label[:28], "points": points, "colour": TREND_COLOURS[i % len(TREND_COLOURS)]}
        )
    return {
        "title": title,
        "lines": lines,
        "left": left,
        "right": right,
        "top": top,
        "bottom": bottom,
        "ticks": [{"x": round(x[y], 1), "label": y} for y in years[::step]],
        "width": right + 200,
        "height": bottom + 20,
    }


def _share_rows(frame: pl.DataFrame) -> list[dict]:
    return [
        {**r, "share": percent(r["share"]), "95 % interval": f"{percent(r['low'])} – {percent(r['high'])}"}
        for r in frame.iter_rows(named=True)
    ]


def _by_group(frame: pl.DataFrame, group: str) -> list[dict]:
    """A cross-tabulation: one row per group, one column per value label (share of the group's documents)."""
    if not frame.height:
        return []
    wide = (
        frame.with_columns(pl.col("share").map_elements(percent, return_dtype=pl.String))
        .pivot(on="label", index=[group, "counted"], values="share")
        .fill_null(percent(0.0))
    )
    return wide.sort(group).rename({"counted": "documents"}).to_dicts()


def validation_section(validation) -> dict:
    """The findings page's validation part: the models against the coders' gold and, for a coding
    round, coder vs coder, the gold's sources, the open disagreements and the coders' evidence audit
    (classification/coders.py `agreement`)."""
    section = {"models": validation.table.to_dicts(), "documents": validation.documents}
    if validation.round is not None:
        section |= {
            "coders": validation.round.between_coders.to_dicts(),
            "gold": validation.round.gold_sources.to_dicts(),
            "unresolved": validation.round.unresolved.with_columns(pl.col("values").list.join("; ")).to_dicts(),
            "audits": validation.round.coder_audits.to_dicts(),
            "by_round": validation.round.models_by_round.to_dicts()
            if validation.round.gold_sources["round"].n_unique() > 1
            else [],
        }
    return section


def findings_page(found: Findings | None, crossed: tuple[str, str] | None, validation: dict | None = None) -> str:
    if found is None:
        return render(
            "findings.html.j2",
            title="Findings — what the corpus says",
            found=None,
            variables=[],
            cross=None,
            compare=None,
            validation=validation,
        )
    cross = None
    if found.cross is not None and crossed:
        first, second = crossed
        table = found.cross.pivot(on=second, index=first, values="documents").fill_null(0)
        cross = {"first": first, "second": second, "rows": table.sort(first).to_dicts()}
    return render(
        "findings.html.j2",
        title="Findings — what the corpus says",
        found=found,
        variables=_variables_section(found),
        cross=cross,
        compare=_compare_section(found),
        validation=validation,
        corrected=_corrected_section(found.corrected) if found.corrected is not None else None,
        models=_models_section(found.models),
        baseline_note=ZERO_SHOT_NOTE,
    )


def _variables_section(found: Findings) -> list[dict]:
    """Each codebook variable's shares with its chart, its trend by year (where a trend means something
    for its type) and its split by source (only when the corpus has more than one source)."""
    variables = []
    for name, var in found.codebook.variables.items():
        mine = found.shares.filter(pl.col("variable") == name)
        by_year = found.by_year.filter(pl.col("variable") == name)
        by_source = found.by_source.filter(pl.col("variable") == name)
        trend = trend_chart(by_year, f"{name} by year") if var.type in ("enum", "boolean", "text") else None
        variables.append(
            {
                "name": name,
                "type": var.type,
                "rows": _share_rows(mine),
                "chart": share_chart(mine.to_dicts(), f"{name}: share of documents"),
                "trend": trend,
                "by_year": _by_group(by_year, "year") if trend else [],
                "by_source": _by_group(by_source, "source") if by_source["source"].n_unique() > 1 else [],
            }
        )
    return variables


def _compare_section(found: Findings) -> dict | None:
    """The two groups of documents compared value by value, when the findings compared two."""
    if found.compare is None:
        return None
    frame = found.compare
    left, right = frame.columns[3:5]
    return {
        "left": left,
        "right": right,
        "documents": frame["documents"][0] if frame.height else 0,
        "rows": [
            {
                "variable": r["variable"],
                "value": r["label"],
                left: percent(r[left]),
                right: percent(r[right]),
                "difference (pp)": r["difference_pp"],
            }
            for r in frame.iter_rows(named=True)
        ],
    }


def _models_section(compared) -> list[dict] | None:
    """The models ranked by how tight their corrected findings are (queries.models_against_gold)."""
    if compared is None or compared.tightest.height < 2:
        return None
    return [
        {
            "model": r["model"],
            "coded": r["coded"],
            "shares": r["shares"],
            "mean width": points_text(r["mean_width"]),
            "widest": points_text(r["widest"]),
            "widest on": r["widest_share"] or "—",
        }
        for r in compared.tightest.iter_rows(named=True)
    ]


def _corrected_section(corrected) -> dict:
    """The corrected shares as the page shows them: per variable its rows and how many more to code."""
    variables = [
        {
            "name": name,
            "plan": plan_text(corrected, name).capitalize(),
            "rows": [
                {"value": r["label"], **{heading: interval_text(r, name) for name, heading in ESTIMATES.items()}}
                for r in part.iter_rows(named=True)
            ],
            "by_year": group_cells(corrected, "year", name),
            "year_difference": difference_text(corrected, "year", name),
        }
        for (name,), part in corrected.table.group_by("variable", maintain_order=True)
    ]
    return {
        "meaning": CORRECTED_MEANING[0].upper() + CORRECTED_MEANING[1:],
        "rounds": ", ".join(corrected.rounds),
        "coded": corrected.coded,
        "drawn": corrected.drawn,
        "notes": corrected.notes,
        "variables": variables,
    }


def default_cross(codebook: Codebook) -> tuple[str, str] | None:
    """The first and the last enum variable (in the pilot codebook: abordagem × subarea)."""
    enums = [name for name, var in codebook.variables.items() if var.type == "enum"]
    return (enums[0], enums[-1]) if len(enums) >= 2 else None


# -- summary, routing, mirror ------------------------------------------------------------------

EVIDENCE_COLOURS = {"literal_share": "#5cb85c", "approximate_share": "#f0ad4e", "absent_share": "#d9534f"}
EVIDENCE_BAR_WIDTH = 300  # pixels for a share of 1


def evidence_chart(rows: list[dict]) -> dict:
    """Literal / approximate / absent shares per variable, stacked."""
    out = []
    for i, r in enumerate(rows):
        x, parts = 140, []
        for key, colour in EVIDENCE_COLOURS.items():
            width = EVIDENCE_BAR_WIDTH * (r.get(key) or 0)
            parts.append({"x": x, "width": round(width, 1), "colour": colour, "key": key, "value": percent(r.get(key))})
            x += width
        out.append({"y": 5 + 22 * i, "variable": r["variable"], "parts": parts})
    return {
        "rows": out,
        "height": 22 * len(rows) + 10,
        "legend": [(k.removesuffix("_share"), c) for k, c in EVIDENCE_COLOURS.items()],
    }


def summary_page(warehouse: Warehouse, sets: list[dict]) -> str:
    shown = []
    for s in sets:
        figures = read_figures(warehouse, s["model"], s["codebook_hash"]).to_dicts()
        shown.append({**s, "figures": figures, "chart": evidence_chart([f for f in figures if f["variable"] != "*"])})
    return render("summary.html.j2", title="Summary — the ADR's figures", sets=shown)


# each figure of a task as the page names it, and its one-line definition (each defined in jev/metrics.py)
ROUTING_FIGURES = {
    "n": ("decisions", "test decisions scored"),
    "accuracy": ("accuracy", "share of decisions answered right (D4: the whole set right)"),
    "majority_baseline_accuracy": (
        "majority class",
        "accuracy of always answering the test split's most common "
        "option: a candidate below it routes worse than no model",
    ),
    "macro_f1": ("macro-F1", "F1 per option, averaged with equal weight (not for D4's sets)"),
    "ece": (
        "ECE",
        "expected calibration error: the gap between confidence and accuracy, averaged over "
        "confidence bins (0 is calibrated)",
    ),
    "brier": ("Brier", "mean squared error of the probability given to the right option (lower is better)"),
    "aurc": (
        "AURC",
        "area under the risk-coverage curve: errors kept as fewer decisions are answered (lower is better)",
    ),
    "high_confidence_wrong_rate": (
        "wrong at the threshold",
        "share of all decisions answered wrongly at or above "
        "the abstention threshold: the error nothing asks again about",
    ),
    "high_confidence_wrong_rate_fixed": ("wrong at p ≥ 0.85", "the same at confidence 0.85 (the fixed threshold)"),
}


def _percent(value: float | None) -> str:
    return "—" if value is None or value != value else f"{value:.1%}"


def _routing_run(name: str, report: BenchmarkReport, images: list[dict]) -> dict:
    """One report folder's page section, from its metrics.json (routing/results.BenchmarkReport): a
    reader's headers, shares of decisions in percent, "—" where a figure does not apply."""
    shares = {"high_confidence_wrong_rate", "high_confidence_wrong_rate_fixed"}
    rows = [
        {
            "candidate": candidate,
            "task": task,
            **{
                header: _percent(getattr(m, k)) if k in shares else ("—" if getattr(m, k) is None else getattr(m, k))
                for k, (header, _) in ROUTING_FIGURES.items()
            },
            "p95 ms per decision": result.latency_ms.get("p95"),
        }
        | ({"accuracy": f"{m.accuracy:.3f} ⚠ below majority"} if m.below_majority else {})
        for candidate, result in report.results.items()
        for task, m in result.tasks.items()
    ]
    verdicts = [
        {"candidate": c, "hypothesis": h, "verdict": getattr(hs, h).verdict, "why": getattr(hs, h).reason}
        for c, hs in report.hypotheses.items()
        for h in ("H1", "H2", "H3")
    ]
    confusions = [
        {"candidate": candidate, "labels": matrix["labels"], "rows": list(zip(matrix["labels"], matrix["matrix"]))}
        for candidate, result in report.results.items()
        if "D1" in result.tasks and (matrix := result.tasks["D1"].confusion) and matrix.get("labels")
    ]
    return {
        "name": name,
        "test_hash": report.test_hash,
        "rows": rows,
        "verdicts": verdicts,
        "legend": [{"name": header, "definition": definition} for header, definition in ROUTING_FIGURES.values()],
        "performance": _routing_performance(report),
        "departures": report.departures,
        "confusions": confusions,
        "images": images,
    }


def _routing_performance(report: BenchmarkReport) -> list[dict]:
    """Each candidate's performance row: latency, throughput at batch 1 and at its production batch,
    memory, size and cost, the figures that decide whether it can serve."""
    performance = []
    for candidate, result in report.results.items():
        perf = result.performance
        cost = perf.cost_per_1000_usd.get("batch 1")
        performance.append(
            {
                "candidate": candidate,
                "runs": perf.independent_runs,
                "p95 per turn ms": result.latency_per_turn_ms_percentiles.get("p95"),
                "decisions/s batch 1": perf.throughput_per_s.get("batch 1"),
                "production batch": perf.production_batch,
                "decisions/s production batch": perf.throughput_per_s.get(f"batch {perf.production_batch}"),
                "load s": perf.load_seconds,
                "peak RSS MB": perf.peak_rss_mb,
                "artifact MB": perf.artifact_mb,
                "shape": perf.shape,
                # fractions of a cent: three significant digits
                "cost/1000 decisions USD (batch 1)": "—" if cost is None or cost != cost else f"{cost:.3g}",
            }
        )
    return performance


def routing_page(routing_root: Path, out: Path) -> str:
    """Each report folder's figures, verdicts, performance and plots. A metrics.json an earlier version
    wrote, in another shape, is named with what to do instead of stopping the site."""
    from pydantic import ValidationError

    runs, stale = [], []
    for metrics_file in sorted(routing_root.glob("*/metrics.json")):
        name = metrics_file.parent.name
        try:
            report = BenchmarkReport.read(metrics_file)
        except (ValidationError, ValueError):
            stale.append(f"{metrics_file}: written by an earlier version; run the benchmark again to show it")
            continue
        images = []
        for image in sorted(metrics_file.parent.glob("*.png")):
            target = out / f"routing-{slug(name)}-{image.name}"
            shutil.copyfile(image, target)
            images.append({"src": target.name, "name": image.stem})
        runs.append(_routing_run(name, report, images))
    cross_file = routing_root / "cross-dataset.json"
    cross = json.loads(cross_file.read_text(encoding="utf-8")) if cross_file.is_file() else []
    return render("routing.html.j2", title="Routing benchmark", runs=runs, cross=cross, stale=stale)


# each figure of a point's evaluation as the page names it (the evaluation's field -> a reader's words)
MIRROR_FIGURES = {
    "logged": "records logged",
    "counted": "cases both judges labelled alike",
    "rule_accuracy": "rule accuracy",
    "mirror_accuracy": "mirror accuracy",
    "rule_accuracy_when_mirror_confident": "rule accuracy where the mirror is confident",
    "mirror_accuracy_when_confident": "mirror accuracy when confident",
    "control_accuracy": "accuracy under control",
    "coverage_at_threshold": "share the mirror is confident on",
    "high_confidence_errors": "mirror wrong when confident",
    "dropped_queue_full": "samples dropped (queue full)",
    "cost_per_decision_usd": "mirror cost per decision",
    "shadow_days": "days in shadow",
    "first_day": "first day",
    "last_day": "last day",
    "recommended_mode": "recommended mode",
}


def _shown(field: str, value) -> str:
    """A figure as a person reads it: shares in percent, a cost in dollars, no 16-digit floats."""
    if isinstance(value, float) and value != value:
        return "n/a"
    if field.endswith("_usd"):
        return f"US$ {value:.2g}"
    if field.endswith(("accuracy", "_confident", "_at_threshold")) and isinstance(value, float):
        return f"{value:.1%}"
    return f"{value:g}" if isinstance(value, float) else str(value)


def mirror_page(warehouse: Warehouse, mirror_root: Path) -> str:
    from pydantic import ValidationError

    evaluations = []
    for r in read_mirror_evaluations(warehouse).iter_rows(named=True):
        try:
            e = MirrorReport.stored(r["evaluation"])
        except ValidationError:  # stored by an earlier version, in another shape
            evaluations.append(
                {
                    "decision_point": r["decision_point"],
                    "log": r["log"],
                    "recommendation": "—",
                    "reasons": "stored by an earlier version: run adri mirror evaluate again",
                    "figures": {},
                }
            )
            continue
        diagnosis = {k: v.get("count") for k, v in e.failure_diagnosis.items()}
        evaluations.append(
            {
                "decision_point": r["decision_point"],
                "log": Path(r["log"]).name,
                "recommendation": e.recommendation,
                "reasons": "; ".join(e.reasons),
                "figures": {label: _shown(k, getattr(e, k)) for k, label in MIRROR_FIGURES.items()}
                | {
                    "confident failures by diagnosis": ", ".join(
                        f"{k.replace('_', ' ')} {v}" for k, v in diagnosis.items()
                    )
                    or "none"
                },
            }
        )
    configurations = [
        {"name": c.name, "text": c.read_text(encoding="utf-8")}
        for c in sorted(mirror_root.rglob("*recommended_gate.yaml"))
    ]
    return render("mirror.html.j2", title="Mirror evaluation", evaluations=evaluations, configurations=configurations)


# -- the site --------------------------------------------------------------------------------


def build_review(
    warehouse: Warehouse,
    codebook: Codebook,
    out: Path | None = None,
    coders: Path | None = None,
    compare: tuple[str, str] | None = None,
    found: Findings | None = None,
    crossed: tuple[str, str] | None = None,
    validation: dict | None = None,
) -> Site:
    """Write the site under `<warehouse folder>/review` and return the index path. `found` is what
    `classification.queries.findings` returned (None: no results yet); `crossed` the two variables
    it crossed."""
    out = out or warehouse.path.parent / "review"
    out.mkdir(parents=True, exist_ok=True)
    pages: list[tuple[str, str, str]] = []  # (file, title, what it answers)
    for name, content, title, answers in _pages(warehouse, codebook, out, coders, compare, found, crossed, validation):
        (out / name).write_text(content, encoding="utf-8")
        pages.append((name, title, answers))
    index = out / "index.html"
    index.write_text(
        render("index.html.j2", title="adri-pipeline review", codebook=codebook, pages=pages), encoding="utf-8"
    )
    return Site(index, [out / name for name, _, _ in pages])


def _pages(
    warehouse: Warehouse,
    codebook: Codebook,
    out: Path,
    coders: Path | None,
    compare: tuple[str, str] | None,
    found: Findings | None,
    crossed: tuple[str, str] | None,
    validation: dict | None,
) -> Iterator[tuple[str, str, str, str]]:
    """(file, content, title, what it answers) of each page in the index's order, made one at a time so
    each is written before the next is built."""
    sets = [s for s in result_sets(warehouse) if s["codebook_hash"] == codebook.content_hash]
    yield (
        "findings.html",
        findings_page(found, crossed, validation),
        "Findings",
        "What does the corpus say: how many studies take each value, by year and source, and how sure are we?",
    )
    for s in sets:
        yield (
            f"documents-{slug(s['model'])}.html",
            documents_page(warehouse, codebook, s["model"]),
            f"Documents: {s['model']} ({s['documents']})",
            "Where exactly is each answer's evidence, and was it found literally?",
        )
    yield from _comparison_pages(warehouse, codebook, [s["model"] for s in sets], compare, coders)
    yield (
        "summary.html",
        summary_page(warehouse, sets),
        "Summary",
        "How often is the answer valid first time, retried, and its evidence literal / approximate / absent?",
    )
    yield (
        "routing.html",
        routing_page(warehouse.path.parent / "routing", out),
        "Routing benchmark",
        "How accurate and calibrated is each routing candidate, and which hypotheses hold?",
    )
    yield (
        "mirror.html",
        mirror_page(warehouse, warehouse.path.parent / "mirror"),
        "Mirror evaluation",
        "Should each decision point's mirror be promoted, kept in shadow or retired, and why?",
    )


def _comparison_pages(
    warehouse: Warehouse, codebook: Codebook, models: list[str], compare: tuple[str, str] | None, coders: Path | None
) -> list[tuple[str, str, str, str]]:
    """(file, content, title, what it answers) of each comparison page: the two models asked for, or else
    the first two with results; and the first model against the human coders when their codes are given."""
    pages = []
    pairs = []
    if compare:
        pairs.append(compare)
    elif len(models) >= 2:
        pairs.append((models[0], models[1]))
    for left, right in pairs:
        a = read_results(warehouse, left, codebook.content_hash)[0]
        b = read_results(warehouse, right, codebook.content_hash)[0]
        pages.append(
            (
                f"compare-{slug(left)}-vs-{slug(right)}.html",
                compare_page(warehouse, codebook, (left, a), (right, b)),
                f"Compare: {left} vs {right}",
                "Where do two models disagree, and on what evidence?",
            )
        )
    if coders is not None and models:
        pages.append(
            (
                f"compare-{slug(models[0])}-vs-coders.html",
                compare_page(
                    warehouse,
                    codebook,
                    (models[0], read_results(warehouse, models[0], codebook.content_hash)[0]),
                    ("coders", coder_values(coders, codebook)),
                ),
                f"Compare: {models[0]} vs coders",
                "Where does the model disagree with the human coders?",
            )
        )
    return pages


def write_review(context: RunContext, compare: tuple[str, str] | None = None) -> Site:
    """The site as `adri review` and the Dagster `review_site` asset write it, on the context's codebook
    and warehouse: the findings of the latest classification run's model (with the coders side by side
    when ADRI_CODERS is set, else a second model when there is one) and every other page."""
    from adri_pipeline.classification.coders import agreement
    from adri_pipeline.classification.queries import findings
    from adri_pipeline.classification.service import NoClassificationRun, recorded_model

    settings, warehouse, codebook = context.settings, context.warehouse.existing(), context.codebook
    crossed = default_cross(codebook)
    models = [s["model"] for s in result_sets(warehouse) if s["codebook_hash"] == codebook.content_hash]
    try:
        model = recorded_model(warehouse, settings.principal_model).model
        other = "coders" if settings.coders else next((m for m in models if m != model), None)
        found = findings(context, model=model, compare=other, cross_variables=crossed)
    except NoClassificationRun:
        found = None
    validation = validation_section(agreement(context)) if settings.coders else None
    return build_review(
        warehouse,
        codebook,
        coders=settings.coders,
        compare=compare,
        found=found,
        crossed=crossed,
        validation=validation,
    )
