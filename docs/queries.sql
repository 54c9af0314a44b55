-- An analyst's saved questions on the snapshot: `make sql` then paste one, or run them all with
--   .venv/bin/adri sql --file docs/queries.sql
-- Every query reads the model whose results were built last (the most recent classification run);
-- replace the subquery with a model's name to ask about another. A test runs this file.

-- 1. Qualitative vs quantitative per year: the share of each approach among the year's documents (0-1).
WITH latest AS (SELECT model, codebook_hash FROM classification_runs ORDER BY finished_at DESC LIMIT 1)
SELECT d.year, v.label AS abordagem, count(*) AS documents,
       round(count(*) / sum(count(*)) OVER (PARTITION BY d.year), 3) AS share_of_year
FROM classification_values v JOIN documents d USING (doc_id) JOIN latest USING (model, codebook_hash)
WHERE v.variable = 'abordagem' AND v.value IN ('qualitativa', 'quantitativa')
GROUP BY d.year, v.label ORDER BY d.year, abordagem;

-- 2. Which answers have no evidence quote, and which quotes the audit could not find in the text.
WITH latest AS (SELECT model, codebook_hash FROM classification_runs ORDER BY finished_at DESC LIMIT 1)
SELECT v.doc_id, d.title, v.variable, v.label, v.audit_status,
       CASE WHEN coalesce(v.evidencia, '') = '' THEN 'no quote' ELSE 'quote not found' END AS problem
FROM classification_values v JOIN documents d USING (doc_id) JOIN latest USING (model, codebook_hash)
WHERE coalesce(v.evidencia, '') = '' OR v.audit_status = 'absent'
ORDER BY problem, v.variable, v.doc_id;

-- 3. What the last codebook edit changed: the answers that differ from the previous version's.
SELECT codebook, previous_version, current_version, variable, change, count(*) AS answers
FROM codebook_changes
WHERE current_hash = (SELECT codebook_hash FROM classification_runs ORDER BY finished_at DESC LIMIT 1)
GROUP BY ALL ORDER BY variable, change;

-- 4. How far to trust the quotes, per variable: literal, approximate and absent among quoted answers (0-1).
WITH latest AS (SELECT model, codebook_hash FROM classification_runs ORDER BY finished_at DESC LIMIT 1)
SELECT variable, documents, literal_share, approximate_share, absent_share, waived
FROM classification_figures JOIN latest USING (model, codebook_hash)
WHERE variable <> '*'
ORDER BY variable;

-- 5. Which techniques the studies use (a list variable: one document may name several), most named first.
WITH latest AS (SELECT model, codebook_hash FROM classification_runs ORDER BY finished_at DESC LIMIT 1)
SELECT technique, count(*) AS documents_naming_it
FROM (SELECT unnest(v.label_list) AS technique
      FROM classification_values v JOIN latest USING (model, codebook_hash) WHERE v.variable = 'tecnica')
GROUP BY technique ORDER BY documents_naming_it DESC, technique;
