"""`adri findings` as text: per variable the share of documents with each value (95 % interval),
optionally by year or source, one variable against another, and a second answer set beside it."""

from __future__ import annotations

import polars as pl

from adri_pipeline.classification.backends.base import ZERO_SHOT_NOTE
from adri_pipeline.classification.findings import percent
from adri_pipeline.classification.queries import Findings


def findings_lines(found: Findings, by: str | None, cross: tuple[str, str] | None) -> list[str]:
    """`found` as classification.queries.findings returns it."""
    book, excluded = found.codebook, found.excluded
    lines = [
        f"{found.model} × codebook {book.name} v{book.version}: {found.counted} documents counted "
        f"(answers that follow the codebook); left out: {excluded.no_abstract} without abstract, "
        f"{excluded.failed} failed, {excluded.not_classified_yet} not classified yet"
    ]
    lines.append(
        f"counted by corpus file{' (--source ' + found.source + ')' if found.source else ''}: "
        + ", ".join(f"{name} {n}" for name, n in found.counted_by_source.items())
    )
    if found.mixed_warning:
        lines.append(f"warning: {found.mixed_warning}")
    if found.zero_shot_baseline:
        lines.append(f"note: {ZERO_SHOT_NOTE}")
    grouped = found.grouped(by) if by else None
    for name in book.variables:
        lines.append(f"\n{name} ({book.variables[name].type})")
        for r in found.shares.filter(pl.col("variable") == name).iter_rows(named=True):
            lines.append(
                f"  {r['label'][:48]:<48} {r['documents']:>6}  {percent(r['share']):>8}  "
                f"95 % [{percent(r['low'])}, {percent(r['high'])}]"
            )
        if grouped is not None:
            for (group,), part in grouped.filter(pl.col("variable") == name).group_by(by, maintain_order=True):
                cells = ", ".join(f"{r['label'][:24]} {percent(r['share'])}" for r in part.iter_rows(named=True))
                lines.append(f"    {by} {group} (n={part['counted'][0]}): {cells}")
    if found.cross is not None:
        table = found.cross.pivot(on=cross[1], index=cross[0], values="documents").fill_null(0)
        with pl.Config(tbl_rows=100, tbl_cols=30, tbl_width_chars=200, tbl_hide_dataframe_shape=True):
            lines += [f"\n{cross[0]} × {cross[1]} (documents)", str(table)]
    if found.compare is not None:
        lines += _side_by_side(found.compare)
    if found.corrected is not None:
        lines += corrected_lines(found.corrected)
        if by:
            lines += corrected_group_lines(found.corrected, by)
    if found.corrected_refused is not None:
        lines.append(f"\nno corrected findings: {found.corrected_refused}")
    return lines


def _side_by_side(compared: pl.DataFrame) -> list[str]:
    """A second answer set beside the first, on the documents both answered: the shares and their
    difference in points."""
    lines = [
        f"\nside by side on the {compared['documents'][0] if compared.height else 0} documents both "
        "answered (shares; difference in points)"
    ]
    left, right = compared.columns[3:5]
    return lines + [
        f"  {r['variable']:<14} {r['label'][:36]:<36} {left[:20]}: {percent(r[left]):>8}  "
        f"{right[:20]}: {percent(r[right]):>8}  {r['difference_pp']:+.1f} pp"
        for r in compared.iter_rows(named=True)
    ]


CORRECTED_MEANING = (
    "corrected: the model's answers on every document, corrected by the coders' random sample "
    "(prediction-powered inference: per answer of the model, the gold's rate among the coded "
    "documents it answered alike); of the share in the population of studies the corpus is drawn "
    'from; "this corpus" is the share among these very documents, whose interval closes as more '
    "of them are coded. Both 95 % intervals are exact or conservative, rare values included, when "
    "the coded documents were drawn at random, every drawn one has gold, and the model did not "
    "learn from them"
)
ESTIMATES = {"model": "model only", "coders": "coders only", "corrected": "corrected", "corpus": "this corpus"}


def interval_text(row: dict, name: str) -> str:
    """One of a corrected row's estimates (a key of ESTIMATES) with its interval."""
    share = row[f"{name}_share"]
    if share is None or share != share:
        return "—"
    return f"{percent(share)} [{percent(row[f'{name}_low'])}, {percent(row[f'{name}_high'])}]"


def plan_text(corrected, variable: str) -> str:
    """How many more random documents to code for the variable's intervals to reach the target width:
    of the population's share, and of this corpus's own share."""
    from adri_pipeline.classification.corrected import MIN_CODED_FOR_PLANNING

    points = f"{100 * corrected.width:.0f} points"
    if corrected.coded < MIN_CODED_FOR_PLANNING:
        return f"how many more to code: not planned below {MIN_CODED_FOR_PLANNING} coded documents"
    more, in_corpus = corrected.to_code.get(variable), corrected.to_code_corpus.get(variable)
    corpus = f"; {in_corpus} more for this corpus's own shares" if in_corpus is not None else ""
    if more is not None:
        return f"{more} more random document(s) to code for intervals {points} wide{corpus}"
    narrowest = corrected.table.filter(pl.col("variable") == variable)["narrowest_width"].max()
    return (
        f"corrected intervals {points} wide are out of reach: this corpus is too small for them however many "
        f"are coded (the interval is of the share in the population of studies it is drawn from; the narrowest "
        f"reachable is about {100 * narrowest:.0f} points){corpus}"
    )


def corrected_lines(corrected) -> list[str]:
    """The corrected shares beside the model's and the coders', and how many more to code per variable."""
    lines = [
        f"\ncorrected by the coders' random sample (rounds {', '.join(corrected.rounds)}: {corrected.coded} of "
        f"{corrected.drawn} drawn documents coded)",
        f"  {CORRECTED_MEANING}",
    ]
    lines += [f"  note: {note}" for note in corrected.notes]
    for (variable,), part in corrected.table.group_by("variable", maintain_order=True):
        lines.append(f"\n{variable}: {plan_text(corrected, variable)}")
        lines.append(f"  {'':<36} " + " ".join(f"{heading:<29}" for heading in ESTIMATES.values()))
        lines += [
            f"  {r['label'][:36]:<36} " + " ".join(f"{interval_text(r, name):<29}" for name in ESTIMATES)
            for r in part.iter_rows(named=True)
        ]
        lines += [
            f"  note, {r['label']}: {r['corrected_note']}"
            for r in part.iter_rows(named=True)
            if r.get("corrected_note")
        ]
    return lines


def group_cells(corrected, by: str, variable: str) -> list[dict]:
    """Per group (`by`: year or source) of the variable: the group's own coded documents and each
    value's corrected share with its 95 % interval, or "too thin" below MIN_CODED_PER_GROUP coded."""
    from adri_pipeline.classification.corrected import MIN_CODED_PER_GROUP

    table = corrected.by_group.get(by)
    if table is None:
        return []
    cells = []
    for (group,), rows in table.filter(pl.col("variable") == variable).group_by("group", maintain_order=True):
        coded = int(rows["coded"].max())
        cell = {by: group, "coded": f"{coded} of {int(rows['classified'].max())}"}
        for r in rows.sort("value").iter_rows(named=True):
            cell[r["label"]] = (
                f"too thin ({coded} coded, {MIN_CODED_PER_GROUP} needed)"
                if coded < MIN_CODED_PER_GROUP
                else interval_text(r, "corrected")
            )
        cells.append(cell)
    return cells


def difference_text(corrected, by: str, variable: str) -> str:
    """The corrected difference between the first and the last group (by name: the earliest and the
    latest year) with enough coded documents, each value with its 95 % interval."""
    from adri_pipeline.classification.corrected import MIN_CODED_PER_GROUP, group_difference

    table = corrected.by_group.get(by, pl.DataFrame()).filter(pl.col("variable") == variable)
    able = (
        sorted(set(table.filter((pl.col("coded") >= MIN_CODED_PER_GROUP) & (pl.col("group") != "unknown"))["group"]))
        if table.height
        else []
    )
    if len(able) < 2:
        return (
            f"no corrected difference: fewer than two {by}s have {MIN_CODED_PER_GROUP} coded documents "
            "(code more at random, or stratify the next draw by it)"
        )
    cells = [
        f"{r['label']} {r['why_not']}"
        if r["why_not"]
        else f"{r['label']} {100 * r['difference']:+.1f} pts [{100 * r['low']:+.1f}, {100 * r['high']:+.1f}]"
        for r in group_difference(table, able[0], able[-1]).sort("value").iter_rows(named=True)
    ]
    return f"corrected difference {able[-1]} − {able[0]} (95 %): " + "; ".join(cells)


def corrected_group_lines(corrected, by: str) -> list[str]:
    """`adri findings --by year|source` under the corrected findings: each group's corrected shares
    from its own coded documents, and the difference between the first and the last group."""
    lines = [f"\ncorrected by {by} (each {by}'s own coded documents; its shares of the population of studies)"]
    for variable in corrected.table["variable"].unique(maintain_order=True):
        lines.append(f"\n{variable}")
        for cell in group_cells(corrected, by, variable):
            values = "; ".join(f"{k} {v}" for k, v in cell.items() if k not in (by, "coded"))
            lines.append(f"  {by} {cell[by]} (coded {cell['coded']}): {values}")
        lines.append(f"  {difference_text(corrected, by, variable)}")
    return lines


def models_lines(compared) -> list[str]:
    """`adri findings --models`: the models ranked by how tight their corrected findings are, then each
    one's errors against the gold per share (sensitivity, false alarms, 95 % intervals)."""
    lines = [
        f"models corrected by the coders' random sample (rounds {', '.join(compared.rounds)}), tightest first:",
        "  the gold corrects any model's bias; what is left of a model's quality is how narrow its corrected "
        "intervals are",
        f"  {'model':<32} {'coded':>5} {'shares':>6} {'mean width':>10} {'widest':>7}  widest on",
    ]
    for r in compared.tightest.iter_rows(named=True):
        lines.append(
            f"  {r['model'][:32]:<32} {r['coded']:>5} {r['shares']:>6} {points_text(r['mean_width']):>10} "
            f"{points_text(r['widest']):>7}  {r['widest_share'] or '—'}"
        )
    for model, errors in compared.errors.items():
        lines.append(f"\n{model} against the gold (random coded documents; 95 % intervals):")
        lines.append(f"  {'':<44} {'found where the coders saw it':<34} {'said where they did not':<30}")
        for r in errors.iter_rows(named=True):
            lines.append(
                f"  {(r['variable'] + ' = ' + r['label'])[:44]:<44} "
                f"{_rate(r['found'], r['coded_with'], r['sensitivity_low'], r['sensitivity_high']):<34} "
                f"{_rate(r['false_alarms'], r['coded_without'], r['false_alarm_low'], r['false_alarm_high'])}"
            )
    return lines


def points_text(width: float) -> str:
    """An interval's width in percentage points, as the pages and `adri findings` print it."""
    return "—" if width is None or width != width else f"{100 * width:.1f} pts"


def _rate(hits: int, of: int, low: float, high: float) -> str:
    return "—" if not of else f"{hits}/{of} ({100 * hits / of:.0f} %, {100 * low:.0f}–{100 * high:.0f})"
