-- Every share in one unit (issue 55): a fraction 0-1 in a column named *_share, as findings_corrected's
-- shares are. The ADR 0011 figures, the evidence audits and the two agreement tables held percentages
-- 0-100 in columns named *_pct: renamed, and what they hold divided by 100, to three decimals (the
-- precision one decimal of a percentage had). The tables rebuilt at every results refresh or
-- materialization are written in shares from now on; what they hold until then is converted here. Each
-- run's figures (classification_runs.figures, JSON) are converted the same way, keys renamed. The command
-- line and the review pages print these shares as percentages.
ALTER TABLE classification_figures RENAME COLUMN json_valid_first_try_pct TO json_valid_first_try_share;
ALTER TABLE classification_figures RENAME COLUMN valid_first_try_pct TO valid_first_try_share;
ALTER TABLE classification_figures RENAME COLUMN retry_pct TO retry_share;
ALTER TABLE classification_figures RENAME COLUMN literal_pct TO literal_share;
ALTER TABLE classification_figures RENAME COLUMN approximate_pct TO approximate_share;
ALTER TABLE classification_figures RENAME COLUMN absent_pct TO absent_share;
UPDATE classification_figures SET
    json_valid_first_try_share = round(json_valid_first_try_share / 100, 3),
    valid_first_try_share = round(valid_first_try_share / 100, 3),
    retry_share = round(retry_share / 100, 3),
    literal_share = round(literal_share / 100, 3),
    approximate_share = round(approximate_share / 100, 3),
    absent_share = round(absent_share / 100, 3);

ALTER TABLE evidence_audits RENAME COLUMN literal_pct TO literal_share;
ALTER TABLE evidence_audits RENAME COLUMN approximate_pct TO approximate_share;
ALTER TABLE evidence_audits RENAME COLUMN absent_pct TO absent_share;
UPDATE evidence_audits SET
    literal_share = round(literal_share / 100, 3),
    approximate_share = round(approximate_share / 100, 3),
    absent_share = round(absent_share / 100, 3);

ALTER TABLE validation_agreement RENAME COLUMN agreement_pct TO agreement_share;
UPDATE validation_agreement SET agreement_share = round(agreement_share / 100, 3);

ALTER TABLE coder_agreement RENAME COLUMN agreement_pct TO agreement_share;
UPDATE coder_agreement SET agreement_share = round(agreement_share / 100, 3);

-- classification/results.py ClassificationFigures as JSON, read typed and written back with *_share keys;
-- a run's figures already in shares (no retry_pct key) are left as they are.
CREATE TEMP MACRO evidence_in_shares(e) AS {
    'literal_share': round(e.literal_pct / 100, 3),
    'approximate_share': round(e.approximate_pct / 100, 3),
    'absent_share': round(e.absent_pct / 100, 3),
    'waived': e.waived,
    'over_20_words': e.over_20_words
};
CREATE TEMP MACRO figures_in_shares(f) AS to_json({
    'documents': f.documents,
    'pending': f.pending,
    'json_valid_first_try_share': round(f.json_valid_first_try_pct / 100, 3),
    'valid_first_try_share': round(f.valid_first_try_pct / 100, 3),
    'retry_share': round(f.retry_pct / 100, 3),
    'seconds_median': f.seconds_median,
    'seconds_p90': f.seconds_p90,
    'evidence': evidence_in_shares(f.evidence),
    'evidence_by_variable': map_from_entries(list_transform(
        map_entries(f.evidence_by_variable), lambda entry: {'key': entry.key, 'value': evidence_in_shares(entry.value)}
    ))
});
UPDATE classification_runs SET figures = figures_in_shares(json_transform(figures, '{
    "documents": "BIGINT", "pending": "BIGINT", "json_valid_first_try_pct": "DOUBLE", "valid_first_try_pct": "DOUBLE",
    "retry_pct": "DOUBLE", "seconds_median": "DOUBLE", "seconds_p90": "DOUBLE",
    "evidence": {"literal_pct": "DOUBLE", "approximate_pct": "DOUBLE", "absent_pct": "DOUBLE", "waived": "BIGINT",
                 "over_20_words": "BIGINT"},
    "evidence_by_variable": "MAP(VARCHAR, STRUCT(literal_pct DOUBLE, approximate_pct DOUBLE, absent_pct DOUBLE, waived BIGINT, over_20_words BIGINT))"
}'))
WHERE json_exists(figures, '$.retry_pct');
DROP MACRO figures_in_shares;
DROP MACRO evidence_in_shares;

COMMENT ON TABLE classification_figures IS 'The ADR 0011 figures per (model, codebook): one row for all variables (variable = ''*'') and one per variable. Rewritten at every results refresh. Shares are fractions 0-1, three decimals.';
COMMENT ON COLUMN classification_figures.json_valid_first_try_share IS 'Share of documents whose first answer parsed as JSON with the schema''s shape, 0-1. Only on the * row.';
COMMENT ON COLUMN classification_figures.valid_first_try_share IS 'Share of documents whose first answer followed the codebook, 0-1. Only on the * row.';
COMMENT ON COLUMN classification_figures.retry_share IS 'Share of documents that needed a second attempt, 0-1. Only on the * row.';
COMMENT ON COLUMN classification_figures.literal_share IS 'Share of quoted (non-waived) answers whose evidence is literal, 0-1.';
COMMENT ON COLUMN classification_figures.approximate_share IS 'Share of quoted (non-waived) answers whose evidence is approximate, 0-1.';
COMMENT ON COLUMN classification_figures.absent_share IS 'Share of quoted (non-waived) answers whose evidence is absent, 0-1.';
COMMENT ON COLUMN classification_figures.waived IS 'Answers with empty evidence on a no-information value (counted apart from the shares).';

COMMENT ON TABLE evidence_audits IS 'The Dagster evidence_audits asset: per (model, codebook, variable) the evidence audit''s shares among quoted answers, the definition classification_figures uses. Shares are fractions 0-1, three decimals. Rewritten whole at each materialization.';
COMMENT ON COLUMN evidence_audits.literal_share IS 'Share of non-waived answers whose evidence is literal, 0-1.';
COMMENT ON COLUMN evidence_audits.approximate_share IS 'Share of non-waived answers whose evidence is approximate, 0-1.';
COMMENT ON COLUMN evidence_audits.absent_share IS 'Share of non-waived answers whose evidence is absent, 0-1.';

COMMENT ON COLUMN validation_agreement.agreement_share IS 'Share of those documents where the model and the coders agree, 0-1, three decimals.';
COMMENT ON COLUMN coder_agreement.agreement_share IS 'Share of those documents where every coder gave the same answer, 0-1, three decimals.';

COMMENT ON COLUMN classification_runs.figures IS 'JSON of the ADR 0011 figures over everything the (model, codebook) held after the run (classification/results.py ClassificationFigures; shares 0-1, three decimals, in *_share keys). Null for a shared-ledger range run, whose results are built later.';
