"""ADR 0011's figures over stored results."""

import polars as pl

from adri_pipeline.classification.results import (
    DOCUMENT_SCHEMA,
    VALUE_SCHEMA,
    Results,
    figures_lines,
    figures_table,
    summarize,
)


def frames():
    values = pl.DataFrame(
        [
            {"doc_id": "a", "variable": "v1", "audit_status": "literal", "evidence_flag": None},
            {"doc_id": "a", "variable": "v2", "audit_status": "waived", "evidence_flag": None},
            {"doc_id": "b", "variable": "v1", "audit_status": "approximate", "evidence_flag": "over_20_words"},
            {"doc_id": "b", "variable": "v2", "audit_status": "absent", "evidence_flag": None},
        ]
    ).with_columns(
        [
            pl.lit(None, dtype).alias(c)
            for c, dtype in VALUE_SCHEMA.items()
            if c not in ("doc_id", "variable", "audit_status", "evidence_flag")
        ]
    )
    documents = pl.DataFrame(
        [
            {"doc_id": "a", "attempts": 1, "json_valid_first_try": True, "valid_first_try": True, "seconds": 1.0},
            {"doc_id": "b", "attempts": 2, "json_valid_first_try": True, "valid_first_try": False, "seconds": 3.0},
        ]
    ).with_columns(
        [
            pl.lit(None, dtype).alias(c)
            for c, dtype in DOCUMENT_SCHEMA.items()
            if c not in ("doc_id", "attempts", "json_valid_first_try", "valid_first_try", "seconds")
        ]
    )
    return Results(values, documents, pending=1)


def test_shares_are_among_non_waived_evidence_as_adr_0011_reports_them():
    figures = summarize(frames())
    assert (figures.documents, figures.pending, figures.retry_share) == (2, 1, 0.5)
    assert (figures.json_valid_first_try_share, figures.valid_first_try_share) == (1.0, 0.5)
    evidence = figures.evidence
    assert (evidence.literal_share, evidence.approximate_share, evidence.absent_share) == (0.333, 0.333, 0.333)
    assert (evidence.waived, evidence.over_20_words) == (1, 1)
    assert figures.evidence_by_variable["v2"].absent_share == 1.0


def test_the_figures_are_typed_and_round_trip_through_the_runs_json():
    """The run's row stores its figures as JSON; read back they are the same typed figures (a dict
    read with .get before: a renamed key came back as None)."""
    from adri_pipeline.classification.results import ClassificationFigures

    figures = summarize(frames())
    assert ClassificationFigures.model_validate_json(figures.model_dump_json()) == figures
    empty = summarize(Results(frames().values.head(0), frames().documents.head(0), pending=3))
    assert (empty.documents, empty.pending, empty.evidence_by_variable) == (0, 3, {})
    assert empty.evidence.literal_share is None


def test_the_figures_table_has_an_overall_row_and_one_per_variable():
    table = figures_table(summarize(frames()), "m", "h")
    assert table["variable"].to_list() == ["*", "v1", "v2"] and table["documents"].to_list() == [2, 2, 2]
    assert any(line.startswith("  v2") for line in figures_lines(summarize(frames())))


def test_the_figures_lines_print_the_stored_shares_in_percent_as_they_always_did():
    """The figures are shares 0-1 (issue 55: every share in the warehouse in one unit); the CLI and the
    demo print them as the percentages they printed before."""
    assert figures_lines(summarize(frames()))[1:] == [
        "JSON valid first try 100.0 %, follows the codebook first try 50.0 %, retry used 50.0 %; "
        "seconds/doc median 2.0, p90 3.0",
        "evidence (non-waived): literal 33.3 %, approximate 33.3 %, absent 33.3 %; waived 1; over 20 words 1",
        "  v1             literal 50.0 %  approximate 50.0 %  absent 0.0 %  waived 0",
        "  v2             literal 0.0 %  approximate 0.0 %  absent 100.0 %  waived 1",
    ]
    table = figures_table(summarize(frames()), "m", "h")
    assert table.select("literal_share", "absent_share").rows() == [(0.333, 0.333), (0.5, 0.0), (0.0, 1.0)]
