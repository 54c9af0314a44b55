"""Names vulture (`make lint`, 60 % confidence) reports unused that are used where it cannot look: called
by a framework, read by their name, or written to a file. Made with `vulture --make-whitelist`, then
reviewed: each entry says who uses it. Dead code is deleted, not listed here; a name that looks dead but
lies in a module being refactored is marked `# dead?` for later. `_` is vulture's placeholder: an entry
`_.name` marks an attribute or method of that name used, a bare `name` a function, class or variable.
Never imported or run; only vulture reads it ([tool.vulture] paths in pyproject.toml)."""

# pydantic validators: pydantic calls what @field_validator / @model_validator register
_._stringify_label_keys  # classification/codebook.py
_._check_values  # classification/codebook.py
_._version_as_text  # classification/codebook.py
_._variable_names  # classification/codebook.py
_._comma_separated  # config.py
_._gold_among_options  # jev/examples.py
_._declared_a_judgment  # mirror/gate_config.py
_._a_judgment_not_a_fact  # mirror/gate_config.py
_._only_hardening  # mirror/gate_config.py
_._no_bare_approval  # mirror/gate_config.py
_._acting_needs_evidence  # mirror/gate_config.py

# fields of a model or dataclass written to a file or report (model_dump, asdict, JSON), set by keyword and
# read by the people and tools the file is for, not by attribute access
failed_documents  # classification/summary.py: the run summary (and read by name in its text)
taxonomy_version  # jev/examples.py: the canonical example's schema (contracts/jev)
justification  # jev/examples.py: the canonical example's schema (contracts/jev)
approved_at  # mirror/approval.py: the gate configuration's approval
disagreements_sampled  # mirror/results.py: the evaluation report
rule_accuracy_when_mirror_confident  # mirror/results.py
high_confidence_errors  # mirror/results.py
dropped_or_failed  # mirror/results.py
last_day  # mirror/results.py
min_shadow_days  # mirror/results.py
min_agreed_cases  # mirror/results.py
evaluated_at  # mirror/results.py
log_sha256  # mirror/results.py
precision  # routing/candidates.py: Kind, in the routing report
artifact_sha256  # routing/freeze.py: the frozen candidate's manifest
reliability  # routing/results.py: metrics.json
price_table  # routing/results.py
abstention_threshold  # routing/results.py
margin_pp  # routing/results.py
min_decisions  # routing/results.py
full_coverage_accuracy  # routing/results.py
min_coverage  # routing/results.py
target_p95_ms  # routing/results.py
created  # routing/team_calibration.py: the team calibration file
assumption  # routing/thresholds.py: the threshold's bound, in the report

# Dagster: assets it loads from their modules, and the methods and hooks its base classes call
recommended_gate_configuration  # defs/mirror/assets.py, @dg.asset
routing_benchmark  # defs/routing/assets.py, @dg.asset
_.load_input  # defs/io_managers.py, an IOManager's
_.setup_for_execution  # defs/resources.py, a ConfigurableResource's
LocalRunLauncher  # defs/launcher.py: named by class in deploy/dagster.yaml's run_launcher
_.supports_check_run_worker_health  # defs/launcher.py, a RunLauncher's
_.check_run_worker_health  # defs/launcher.py, a RunLauncher's

# named in a string: loaded by import path or looked up by name
SystemOneCandidate  # routing/wire.py: the "jev:" prefix in routing/candidates.py's table of candidates
app_factory  # routing/service.py: `uvicorn 'adri_pipeline.routing.service:app_factory' --factory`
intervals_naive  # benchmarks/corrected_grid/reference_adapters.py: the grid's `adapter.py:function` argument
intervals_wald_diff  # benchmarks/corrected_grid/reference_adapters.py

# methods and attributes a library's base class calls or reads
_.authenticate  # routing/serve.py: Starlette's AuthenticationBackend
_.send_400_response  # routing/serve_server.py: uvicorn's h11 protocol, on a request it cannot parse
_.handle_starttag  # mirror/replay.py, reports' test_review.py: html.parser.HTMLParser
_.handle_endtag  # html.parser.HTMLParser
_.handle_data  # html.parser.HTMLParser
_.do_GET  # loopback/model_server.py, models/test_real_model.py: http.server.BaseHTTPRequestHandler
_.do_POST  # BaseHTTPRequestHandler
_.log_message  # BaseHTTPRequestHandler
_.protocol_version  # BaseHTTPRequestHandler
_.disable_nagle_algorithm  # loopback/model_server.py: socketserver.StreamRequestHandler
_.close_connection  # BaseHTTPRequestHandler
_.daemon_threads  # http.server.ThreadingHTTPServer
_.should_exit  # loopback/systemone_servers.py: uvicorn.Server's loop reads it
_.preserve_quotes  # mirror/service.py: ruamel.yaml's YAML reads it
_.isolation_level  # warehouse/shared.py: psycopg's connection property (a setter)
mtime_ns  # models/openai.py: a parameter that only keys an lru_cache
pos  # progress.py: tqdm's display() signature, overridden, the argument ignored
nolock  # progress.py: tqdm's clear() signature, overridden, the argument ignored

# pytest: hooks, module marks and fixtures it finds by name
pytest_collection_modifyitems  # adri_pipeline_tests/conftest.py
pytestmark  # test_install.py, defs/test_backfill.py, test_cli_and_dagster.py, test_postgres.py, ...
dagster_on_postgres  # defs/test_postgres.py, taken by @pytest.mark.usefixtures
stop_handlers  # conftest.py: a fixture tests take for its effect (signal handlers restored)

# dead? (in mirror/gate.py, being refactored): counted when a log record is lost, read by nothing
_.log_dropped
