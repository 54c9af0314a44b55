"""Review pages: a static HTML site, opened from disk, that lets researchers check the model's work.

ADR 0011 classifies so that the panel can "destacar a evidência no resumo que o painel mostra" and
so that models can be compared with human coders. The site answers:

- index.html        what is here, and what each page answers
- documents-*.html  per (model, codebook): every document's title and abstract with each variable's
                    evidence highlighted in place from the stored offsets, coloured by audit status
- compare-*.html    two models (or a model and the coders' file) on the same documents, disagreements first
- summary.html      the ADR's figures per (model, codebook) with a bar chart per variable
- routing.html      the routing benchmark report(s); mirror.html the mirror evaluation(s)

All corpus text is escaped. Highlights are rendered here, not by script, so the page is checkable
by parsing: every <mark> carries the [start, end) of its segment in its field and the variables
whose evidence covers it. 5,000 documents stay responsive: documents are shown 50 at a time and
off-screen ones are skipped by the browser (`content-visibility: auto`).
"""

from __future__ import annotations

import html
import json
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from adri_pipeline.classification.codebook import Codebook
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


@dataclass
class Site:
    index: Path
    pages: list[Path]


def slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "-", text).strip("-").lower()[:60]


def esc(value) -> str:
    return html.escape("" if value is None else str(value), quote=True)


# -- highlighting ----------------------------------------------------------------------------

def highlight(text: str, spans: list[tuple[int, int, str, str]]) -> str:
    """`text` escaped, with each [start, end) of `spans` (start, end, variable, status) marked.
    Overlapping quotes are split at every boundary; each <mark> names its segment and variables."""
    text = text or ""
    cuts = sorted({0, len(text), *(s for s, _, _, _ in spans), *(e for _, e, _, _ in spans)})
    out = []
    for start, end in zip(cuts, cuts[1:]):
        covering = [(v, st) for s, e, v, st in spans if s <= start and end <= e]
        piece = esc(text[start:end])
        if not covering:
            out.append(piece)
            continue
        status = max((st for _, st in covering), key=lambda st: STATUS_ORDER.get(st, 0))
        variables = " ".join(sorted({v for v, _ in covering}))
        out.append(f'<mark class="ev {esc(status)}" data-start="{start}" data-end="{end}" '
                   f'data-vars="{esc(variables)}" title="{esc(variables)}">{piece}</mark>')
    return "".join(out)


def _spans(values: pl.DataFrame, field: str) -> list[tuple[int, int, str, str]]:
    rows = values.filter((pl.col("evidence_field").fill_null("abstract") == field)
                         & pl.col("evidence_start").is_not_null())
    return [(r["evidence_start"], r["evidence_end"], r["variable"], r["audit_status"])
            for r in rows.iter_rows(named=True)]


# -- page frame --------------------------------------------------------------------------------

STYLE = """
body{font:15px/1.5 system-ui,sans-serif;margin:0;color:#1d1d1f;background:#fafafa}
header.top{background:#1f3a5f;color:#fff;padding:.6em 1.2em}header.top a{color:#cfe3ff;margin-right:1em}
main{max-width:1100px;margin:0 auto;padding:1em}
table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #ccc;padding:.25em .5em;text-align:left;vertical-align:top}
th{background:#eef}
mark.ev{padding:0 1px;border-radius:2px}mark.literal{background:#c8f2c2}mark.approximate{background:#ffe59a}
mark.absent{background:#ffb3b3}mark.waived{background:#ddd}
.badge{font-size:.8em;padding:0 .4em;border-radius:3px}.badge.literal{background:#c8f2c2}
.badge.approximate{background:#ffe59a}.badge.absent{background:#ffb3b3}.badge.waived{background:#ddd}
article.doc{background:#fff;border:1px solid #ddd;border-radius:6px;padding:.8em 1em;margin:.8em 0;
 content-visibility:auto;contain-intrinsic-size:auto 420px;scroll-margin-top:120px}
article.doc.current{outline:3px solid #1f3a5f}
.controls{position:sticky;top:0;background:#fafafa;padding:.5em 0;border-bottom:1px solid #ddd;z-index:1}
.controls label{margin-right:.8em}.muted{color:#666}
"""


def page(title: str, body: str, script: str = "") -> str:
    nav = " ".join(f'<a href="{href}">{label}</a>' for href, label in (
        ("index.html", "Index"), ("summary.html", "Summary"), ("routing.html", "Routing"), ("mirror.html", "Mirror")))
    return (f"<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>{esc(title)}</title>"
            f"<style>{STYLE}</style></head><body><header class=\"top\">{nav}</header><main><h1>{esc(title)}</h1>"
            f"{body}</main>{f'<script>{script}</script>' if script else ''}</body></html>")


def table(rows: list[dict], columns: list[str] | None = None) -> str:
    if not rows:
        return '<p class="muted">nothing yet</p>'
    columns = columns or list(rows[0])
    head = "".join(f"<th>{esc(c)}</th>" for c in columns)
    body = "".join("<tr>" + "".join(f"<td>{esc(_fmt(r.get(c)))}</td>" for c in columns) + "</tr>" for r in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _fmt(value):
    if isinstance(value, float):
        return f"{value:.3f}" if abs(value) < 10 else f"{value:.1f}"
    if isinstance(value, (list, dict)):
        return json.dumps(value, ensure_ascii=False, default=str)
    return value


# -- documents -------------------------------------------------------------------------------

DOCUMENTS_SCRIPT = """
const docs=[...document.querySelectorAll('article.doc')];let shown=[],pageNo=0,current=-1;const SIZE=%d;
const q=id=>document.getElementById(id);
function matches(d){const v=q('f-var').value,val=q('f-val').value,st=q('f-status').value,s=q('f-search').value.toLowerCase();
 if(s&&!(d.dataset.id.toLowerCase().includes(s)||d.dataset.title.toLowerCase().includes(s)))return false;
 if(!v&&!val&&!st)return true;
 return [...d.querySelectorAll('tr.answer')].some(r=>(!v||r.dataset.var===v)&&(!val||r.dataset.value.split('|').includes(val))&&(!st||r.dataset.status===st));}
function render(){shown=docs.filter(matches);const pages=Math.max(1,Math.ceil(shown.length/SIZE));pageNo=Math.min(pageNo,pages-1);
 const visible=new Set(shown.slice(pageNo*SIZE,(pageNo+1)*SIZE));docs.forEach(d=>d.hidden=!visible.has(d));
 q('count').textContent=shown.length+' of '+docs.length+' documents, page '+(pageNo+1)+' of '+pages;current=-1;
 docs.forEach(d=>d.classList.remove('current'));}
function go(step){const vis=shown.slice(pageNo*SIZE,(pageNo+1)*SIZE);if(!vis.length)return;
 if(current+step>=vis.length&&(pageNo+1)*SIZE<shown.length){pageNo++;render();current=-1;go(1);return;}
 if(current+step<0&&pageNo>0){pageNo--;render();current=SIZE;go(-1);return;}
 current=Math.max(0,Math.min(vis.length-1,current+step));docs.forEach(d=>d.classList.remove('current'));
 vis[current].classList.add('current');vis[current].scrollIntoView({block:'start'});q('current').textContent=vis[current].dataset.id;}
['f-var','f-val','f-status'].forEach(id=>q(id).addEventListener('change',()=>{pageNo=0;render();}));
q('f-search').addEventListener('input',()=>{pageNo=0;render();});
q('prev-page').onclick=()=>{pageNo=Math.max(0,pageNo-1);render();};q('next-page').onclick=()=>{pageNo++;render();};
document.addEventListener('keydown',e=>{if(e.target.tagName==='INPUT')return;
 if(e.key==='j'||e.key==='ArrowDown'&&e.altKey||e.key==='n'){go(1);e.preventDefault();}
 if(e.key==='k'||e.key==='ArrowUp'&&e.altKey||e.key==='p'){go(-1);e.preventDefault();}});
render();
""" % PAGE_SIZE


def _document_article(doc: dict, values: pl.DataFrame) -> str:
    rows = []
    for r in values.iter_rows(named=True):
        where = f"{r['evidence_field'] or 'abstract'} [{r['evidence_start']}, {r['evidence_end']})" \
            if r["evidence_start"] is not None else "—"
        rows.append(
            f'<tr class="answer" data-var="{esc(r["variable"])}" data-value="{esc(r["value"])}" '
            f'data-status="{esc(r["audit_status"])}"><td>{esc(r["variable"])}</td>'
            f'<td>{esc(r["label"])}</td><td><span class="badge {esc(r["audit_status"])}">{esc(r["audit_status"])}'
            f'</span>{" ⚑ over 20 words" if r.get("evidence_flag") else ""}</td><td>{esc(r["evidencia"])}</td>'
            f"<td>{esc(where)}</td></tr>")
    title = highlight(doc["title"] or "", _spans(values, "title"))
    abstract = highlight(doc["abstract"] or "", _spans(values, "abstract"))
    return (f'<article class="doc" id="doc-{esc(doc["doc_id"])}" data-id="{esc(doc["doc_id"])}" '
            f'data-title="{esc(doc["title"])}"><h2 class="title" data-field="title">{title}</h2>'
            f'<p class="muted">{esc(doc["doc_id"])} · {esc(doc.get("source"))}</p>'
            f'<p class="abstract" data-field="abstract">{abstract}</p>'
            f"<table><thead><tr><th>variable</th><th>value</th><th>audit</th><th>evidencia</th><th>where</th></tr>"
            f"</thead><tbody>{''.join(rows)}</tbody></table></article>")


def documents_page(warehouse: Warehouse, codebook: Codebook, model: str) -> str:
    values, _, _ = read_results(warehouse, model, codebook.content_hash)
    doc_ids = values["doc_id"].unique(maintain_order=True).to_list()
    documents = read_documents(warehouse, sorted(doc_ids))
    by_doc = {k[0]: g for k, g in values.group_by("doc_id")}
    articles = [_document_article(d, by_doc[d["doc_id"]]) for d in documents.iter_rows(named=True)]
    options = lambda items: "".join(f'<option value="{esc(i)}">{esc(i)}</option>' for i in items)  # noqa: E731
    value_set = sorted({v for joined in values["value"].to_list() for v in str(joined).split("|")})
    controls = (
        '<div class="controls">'
        f'<label>variable <select id="f-var"><option value="">all</option>{options(codebook.variables)}</select></label>'
        f'<label>value <select id="f-val"><option value="">all</option>{options(value_set)}</select></label>'
        '<label>audit <select id="f-status"><option value="">all</option>'
        f'{options(["literal", "approximate", "absent", "waived"])}</select></label>'
        '<label>search <input id="f-search" type="search" placeholder="id or title"></label>'
        '<button id="prev-page">‹ page</button> <button id="next-page">page ›</button> '
        '<span id="count" class="muted"></span> · current: <span id="current">—</span>'
        '<div class="muted">keys: j / n next document, k / p previous; colours: '
        '<span class="badge literal">literal</span> <span class="badge approximate">approximate</span> '
        '<span class="badge absent">absent</span> (absent quotes have no place to highlight)</div></div>')
    return page(f"Documents — {model} × {codebook.name} v{codebook.version}", controls + "".join(articles),
                DOCUMENTS_SCRIPT)


# -- compare ---------------------------------------------------------------------------------

def disagreements(a: pl.DataFrame, b: pl.DataFrame) -> pl.DataFrame:
    """(doc_id, variable) pairs both sides answered with different values (lists as sets)."""
    def canonical(frame):
        return frame.with_columns(pl.col("value").map_elements(
            lambda v: "|".join(sorted(p.strip().lower() for p in str(v).split("|") if p.strip())),
            return_dtype=pl.String).alias("_canon"))
    joined = canonical(a).join(canonical(b), on=["doc_id", "variable"], suffix="_b")
    return joined.filter(pl.col("_canon") != pl.col("_canon_b")).sort("doc_id", "variable")


def compare_page(warehouse: Warehouse, codebook: Codebook, left: tuple[str, pl.DataFrame],
                 right: tuple[str, pl.DataFrame]) -> str:
    (left_name, a), (right_name, b) = left, right
    differ = disagreements(a, b)
    common = a.join(b, on=["doc_id", "variable"]).height
    documents = {d["doc_id"]: d for d in read_documents(warehouse, differ["doc_id"].unique().to_list()).iter_rows(named=True)}
    rows = []
    for r in differ.iter_rows(named=True):
        doc = documents.get(r["doc_id"], {"title": "", "abstract": ""})

        def quoted(suffix: str) -> str:
            one = pl.DataFrame([{"variable": r["variable"], "audit_status": r.get(f"audit_status{suffix}"),
                                 "evidence_field": r.get(f"evidence_field{suffix}"),
                                 "evidence_start": r.get(f"evidence_start{suffix}"),
                                 "evidence_end": r.get(f"evidence_end{suffix}")}],
                               schema={"variable": pl.String, "audit_status": pl.String, "evidence_field": pl.String,
                                       "evidence_start": pl.Int64, "evidence_end": pl.Int64})
            field = r.get(f"evidence_field{suffix}") or "abstract"
            text = doc.get(field) or ""
            return (f'<div data-field="{esc(field)}">{highlight(text, _spans(one, field))}</div>'
                    if r.get(f"evidence_start{suffix}") is not None else f"<em>{esc(r.get(f'evidencia{suffix}') or '—')}</em>")

        rows.append(f'<tr class="disagreement" data-doc="{esc(r["doc_id"])}" data-var="{esc(r["variable"])}">'
                    f'<td>{esc(r["doc_id"])}<br><span class="muted">{esc(doc.get("title"))}</span></td>'
                    f'<td>{esc(r["variable"])}</td><td><b>{esc(r.get("label") or r["value"])}</b>{quoted("")}</td>'
                    f'<td><b>{esc(r.get("label_b") or r["value_b"])}</b>{quoted("_b")}</td></tr>')
    body = (f"<p>{len(rows)} disagreements among {common} (document, variable) pairs both answered "
            f"({esc(left_name)} vs {esc(right_name)}); disagreements first, agreements are only counted.</p>"
            f"<table><thead><tr><th>document</th><th>variable</th><th>{esc(left_name)}</th><th>{esc(right_name)}</th>"
            f"</tr></thead><tbody>{''.join(rows)}</tbody></table>")
    return page(f"Compare — {left_name} vs {right_name}", body)


def coder_values(path: Path, codebook: Codebook) -> pl.DataFrame:
    """The coders' file in the shape of `classification_values` (no offsets unless it has them)."""
    from adri_pipeline.classification.agreement import load_coder_labels

    coded = load_coder_labels(path, codebook)
    return coded.with_columns(pl.col("value").alias("label"),
                              pl.lit(None, pl.String).alias("audit_status"),
                              pl.lit(None, pl.String).alias("evidence_field"),
                              pl.lit(None, pl.Int32).alias("evidence_start"),
                              pl.lit(None, pl.Int32).alias("evidence_end"))


# -- summary, routing, mirror ------------------------------------------------------------------

def bar_chart(rows: list[dict]) -> str:
    """Inline SVG: literal / approximate / absent shares per variable, stacked."""
    colours = {"literal_pct": "#5cb85c", "approximate_pct": "#f0ad4e", "absent_pct": "#d9534f"}
    height = 22 * len(rows) + 10
    bars = []
    for i, r in enumerate(rows):
        x, y = 140, 5 + 22 * i
        bars.append(f'<text x="0" y="{y + 14}" font-size="12">{esc(r["variable"])}</text>')
        for key, colour in colours.items():
            width = 3 * (r.get(key) or 0)
            bars.append(f'<rect x="{x}" y="{y}" width="{width:.1f}" height="16" fill="{colour}">'
                        f'<title>{esc(key)}: {esc(r.get(key))}</title></rect>')
            x += width
    legend = " ".join(f'<tspan fill="{c}">■ {k.removesuffix("_pct")}</tspan>' for k, c in colours.items())
    return (f'<svg role="img" width="460" height="{height + 20}" xmlns="http://www.w3.org/2000/svg">{"".join(bars)}'
            f'<text x="140" y="{height + 14}" font-size="12">{legend} (share of non-waived evidence)</text></svg>')


def summary_page(warehouse: Warehouse, sets: list[dict]) -> str:
    parts = []
    for s in sets:
        figures = read_figures(warehouse, s["model"], s["codebook_hash"]).to_dicts()
        per_variable = [f for f in figures if f["variable"] != "*"]
        parts.append(f"<h2>{esc(s['model'])} × codebook {esc(s['codebook_version'])} ({esc(s['codebook_hash'][:12])})</h2>"
                     + table(figures, ["variable", "documents", "json_valid_first_try_pct", "valid_first_try_pct",
                                       "retry_pct", "literal_pct", "approximate_pct", "absent_pct", "waived",
                                       "over_20_words", "seconds_median", "seconds_p90"])
                     + bar_chart(per_variable))
    return page("Summary — the ADR's figures", "".join(parts) or '<p class="muted">no results yet</p>')


def routing_page(routing_root: Path, out: Path) -> str:
    parts = []
    for metrics_file in sorted(routing_root.glob("*/metrics.json")):
        figures = json.loads(metrics_file.read_text(encoding="utf-8"))
        name = metrics_file.parent.name
        parts.append(f"<h2>{esc(name)}</h2><p class=\"muted\">test split sha256 {esc(str(figures.get('test_hash'))[:16])}</p>")
        rows = []
        for candidate, result in figures.get("results", {}).items():
            for task, m in result.get("tasks", {}).items():
                rows.append({"candidate": candidate, "task": task, **{k: m.get(k) for k in (
                    "n", "accuracy", "macro_f1", "ece", "brier", "aurc", "high_confidence_wrong_rate")},
                    "p95_ms": result.get("latency_ms", {}).get("p95")})
        parts.append(table(rows))
        verdicts = [{"candidate": c, "hypothesis": h, "verdict": v.get("verdict"), "why": v.get("reason") or v.get("detail")}
                    for c, hs in figures.get("hypotheses", {}).items() for h, v in hs.items()]
        parts.append("<h3>Verdicts</h3>" + table(verdicts))
        for candidate, result in figures.get("results", {}).items():
            matrix = result.get("tasks", {}).get("D1", {}).get("confusion")
            if isinstance(matrix, dict) and matrix.get("labels"):
                labels = matrix["labels"]
                head = "".join(f"<th>{esc(label)}</th>" for label in labels)
                body = "".join(f"<tr><th>{esc(label)}</th>" + "".join(f"<td>{esc(c)}</td>" for c in row) + "</tr>"
                               for label, row in zip(labels, matrix["matrix"]))
                parts.append(f"<h3>Confusion matrix D1 — {esc(candidate)}</h3><table><tr><th></th>{head}</tr>{body}</table>")
        for image in sorted(metrics_file.parent.glob("*.png")):
            target = out / f"routing-{slug(name)}-{image.name}"
            shutil.copyfile(image, target)
            parts.append(f'<figure><img src="{esc(target.name)}" alt="{esc(image.stem)}" width="480">'
                         f"<figcaption>{esc(image.stem)}</figcaption></figure>")
    return page("Routing benchmark", "".join(parts) or '<p class="muted">no routing report yet: adri routing run</p>')


def mirror_page(warehouse: Warehouse, mirror_root: Path) -> str:
    evaluations = read_mirror_evaluations(warehouse)
    parts = []
    for r in evaluations.iter_rows(named=True):
        e = json.loads(r["evaluation"])
        keys = ("logged", "counted", "rule_accuracy", "mirror_accuracy", "rule_accuracy_when_mirror_confident",
                "mirror_accuracy_when_confident", "control_accuracy", "coverage_at_threshold",
                "high_confidence_errors", "dropped_queue_full", "cost_per_decision_usd", "shadow_days",
                "first_day", "last_day", "recommended_mode")
        diagnosis = {k: v.get("count") for k, v in (e.get("failure_diagnosis") or {}).items()}
        parts.append(f"<h2>{esc(r['decision_point'])} <span class=\"muted\">({esc(r['log'])})</span></h2>"
                     f"<p><b>{esc(e['recommendation'])}</b>: {esc('; '.join(e.get('reasons', [])))}</p>"
                     + table([{k: e.get(k) for k in keys} | {"failures (diagnosis)": diagnosis}]))
    for config in sorted(mirror_root.rglob("*recommended_gate.yaml")):
        parts.append(f"<h3>Generated configuration (nothing acts until `adri mirror approve`): {esc(config.name)}</h3>"
                     f"<pre>{esc(config.read_text(encoding='utf-8'))}</pre>")
    return page("Mirror evaluation", "".join(parts) or '<p class="muted">no mirror evaluation yet</p>')


# -- the site --------------------------------------------------------------------------------

def build_review(warehouse: Warehouse, codebook: Codebook, out: Path | None = None,
                 coders: Path | None = None, compare: tuple[str, str] | None = None) -> Site:
    """Write the site under `<warehouse folder>/review` and return the index path."""
    out = out or warehouse.path.parent / "review"
    out.mkdir(parents=True, exist_ok=True)
    sets = [s for s in result_sets(warehouse) if s["codebook_hash"] == codebook.content_hash]
    pages: list[tuple[str, str, str]] = []  # (file, title, what it answers)

    def write(name: str, content: str, title: str, answers: str) -> None:
        (out / name).write_text(content, encoding="utf-8")
        pages.append((name, title, answers))

    for s in sets:
        write(f"documents-{slug(s['model'])}.html", documents_page(warehouse, codebook, s["model"]),
              f"Documents: {s['model']} ({s['documents']})",
              "Where exactly is each answer's evidence, and was it found literally?")
    models = [s["model"] for s in sets]
    pairs = []
    if compare:
        pairs.append(compare)
    elif len(models) >= 2:
        pairs.append((models[0], models[1]))
    for left, right in pairs:
        a = read_results(warehouse, left, codebook.content_hash)[0]
        b = read_results(warehouse, right, codebook.content_hash)[0]
        write(f"compare-{slug(left)}-vs-{slug(right)}.html", compare_page(warehouse, codebook, (left, a), (right, b)),
              f"Compare: {left} vs {right}", "Where do two models disagree, and on what evidence?")
    if coders is not None and models:
        write(f"compare-{slug(models[0])}-vs-coders.html",
              compare_page(warehouse, codebook, (models[0], read_results(warehouse, models[0], codebook.content_hash)[0]),
                           ("coders", coder_values(coders, codebook))),
              f"Compare: {models[0]} vs coders", "Where does the model disagree with the human coders?")
    write("summary.html", summary_page(warehouse, sets), "Summary",
          "How often is the answer valid first time, retried, and its evidence literal / approximate / absent?")
    write("routing.html", routing_page(warehouse.path.parent / "routing", out), "Routing benchmark",
          "How accurate and calibrated is each routing candidate, and which hypotheses hold?")
    write("mirror.html", mirror_page(warehouse, warehouse.path.parent / "mirror"), "Mirror evaluation",
          "Should each decision point's mirror be promoted, kept in shadow or retired, and why?")
    items = "".join(f'<li><a href="{esc(name)}">{esc(title)}</a> — {esc(answers)}</li>' for name, title, answers in pages)
    index = out / "index.html"
    index.write_text(page("adri-pipeline review", f"<p>Codebook {esc(codebook.name)} v{esc(codebook.version)} "
                                                  f"({esc(codebook.content_hash[:12])}).</p><ul>{items}</ul>"),
                     encoding="utf-8")
    return Site(index, [out / name for name, _, _ in pages])
