-- Each run's figures with its shares as fractions 0-1 in *_share keys, as the DuckDB warehouse stores
-- them (its migration 0020): a pull copies these rows into it whole. The figures of runs written before
-- held percentages 0-100 in *_pct keys; they are converted (three decimals), those already in shares
-- (no retry_pct key) left as they are.
CREATE FUNCTION pg_temp.evidence_in_shares(e jsonb) RETURNS jsonb LANGUAGE sql AS $$
    SELECT jsonb_build_object(
        'literal_share', round((e ->> 'literal_pct')::numeric / 100, 3)::double precision,
        'approximate_share', round((e ->> 'approximate_pct')::numeric / 100, 3)::double precision,
        'absent_share', round((e ->> 'absent_pct')::numeric / 100, 3)::double precision,
        'waived', e -> 'waived',
        'over_20_words', e -> 'over_20_words'
    )
$$;
CREATE FUNCTION pg_temp.figures_in_shares(f jsonb) RETURNS jsonb LANGUAGE sql AS $$
    SELECT jsonb_build_object(
        'documents', f -> 'documents',
        'pending', f -> 'pending',
        'json_valid_first_try_share', round((f ->> 'json_valid_first_try_pct')::numeric / 100, 3)::double precision,
        'valid_first_try_share', round((f ->> 'valid_first_try_pct')::numeric / 100, 3)::double precision,
        'retry_share', round((f ->> 'retry_pct')::numeric / 100, 3)::double precision,
        'seconds_median', f -> 'seconds_median',
        'seconds_p90', f -> 'seconds_p90',
        'evidence', pg_temp.evidence_in_shares(f -> 'evidence'),
        'evidence_by_variable', (
            SELECT coalesce(jsonb_object_agg(variable, pg_temp.evidence_in_shares(evidence)), '{}'::jsonb)
            FROM jsonb_each(f -> 'evidence_by_variable') AS by_variable (variable, evidence)
        )
    )
$$;
UPDATE classification_runs SET figures = pg_temp.figures_in_shares(figures::jsonb)::text
WHERE figures IS NOT NULL AND figures::jsonb ? 'retry_pct';
DROP FUNCTION pg_temp.figures_in_shares(jsonb);
DROP FUNCTION pg_temp.evidence_in_shares(jsonb);
