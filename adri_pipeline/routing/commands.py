"""`adri routing ACTION`: each action over the routing application (routing/service.py), with what
it prints. `options` is cli.RoutingOptions."""

from __future__ import annotations

import json
import sys

from adri_pipeline.config import Settings
from adri_pipeline.routing import service
from adri_pipeline.routing.candidates import kind_of
from adri_pipeline.routing.datasets import report_folder


def _config(settings: Settings, options):
    return service.config_for(settings, seed=options.benchmark_seed, llm_max_examples=options.llm_limit or 0)


def build(settings: Settings, options) -> int:
    dataset = service.build_examples(settings, _config(settings, options))
    counts = {s: len(dataset.in_split(s)) for s in ("dev", "calibration", "test")}
    print(f"{len(dataset.examples)} examples {counts}; test split frozen, sha256 {dataset.test_hash}")
    return 0


def pilot(settings: Settings, options) -> int:
    path = service.run_pilot(settings)
    record = json.loads(path.read_text(encoding="utf-8"))
    for name, chosen in record["candidates"].items():
        tried = ", ".join(f"{b}: {v:.0f}/s" for b, v in chosen["throughput_per_s"].items())
        print(
            f"{name}: production batch {chosen['batch']}"
            + (f" (decisions/s by batch {tried})" if tried else f" ({chosen.get('why', '')})")
        )
    print(f"pilot on {record['examples']} dev examples: {path} (later runs of {record['dataset']} use it)")
    return 0


def serve(settings: Settings, options) -> int:
    from adri_pipeline.routing import serve_server

    warning = serve_server.warn_if_open(options.host, options.key_env)
    if warning:
        print(warning, file=sys.stderr, flush=True)
    candidate = options.candidate or service.candidates_of(settings)[0]
    kind_of(candidate)  # an unknown candidate is said before any fit
    app = service.serving(
        settings, candidate, options.key_env, options.budget, options.clarify, options.team_calibration
    )
    server, sock = serve_server.server(app, options.host, options.port)
    host, port = sock.getsockname()[:2]
    print(
        f"serving {candidate} on http://{host}:{port}/v1/systemone (GET /v1/models, GET /v1/drift; "
        f"{app.state.limits}); check it with `jevcompat test http://{host}:{port}`",
        flush=True,
    )
    try:
        server.run(sockets=[sock])
    finally:
        sock.close()
    return 0


def calibrate(settings: Settings, options) -> int:
    """`adri routing calibrate --team FILE`: the candidate recertified on a team's labelled turns."""
    from adri_pipeline.routing.team_calibration import summary

    candidate = options.candidate or service.candidates_of(settings)[0]
    team, path = service.calibrate_for_team(settings, candidate, options.team)
    print("\n".join(summary(team, _config(settings, options).threshold_risk)))
    print(
        f"saved: {path}; serve with it: adri routing serve --dataset {settings.routing_dataset} "
        f"--candidate {candidate} --team-calibration {path}"
    )
    return 0


def cross(settings: Settings, options) -> int:
    fits = [d.strip() for d in (options.fitted_on or settings.routing_dataset).split(",") if d.strip()]
    tests = [d.strip() for d in (options.tested_on or ",".join(fits)).split(",") if d.strip()]
    path = service.cross_dataset(settings, fits, tests)
    print(path.read_text(encoding="utf-8"))
    print(f"table: {path}")
    return 0


def run(settings: Settings, options, test_file: str | None = None) -> int:
    """`run` measures out of source as well (`--test` files added to them); `evaluate` only on `--test`."""
    also = [options.test_file] if options.test_file and test_file is None else []
    result = service.benchmark(settings, _config(settings, options), test_file=test_file, also_test=also)
    print(result.report.read_text(encoding="utf-8"))
    print(
        f"report: {result.report}\nplots: {result.report.parent / 'reliability_D1.png'}, "
        f"{result.report.parent / 'coverage_accuracy_D1.png'}"
    )
    return 0


def evaluate(settings: Settings, options) -> int:
    if not options.test_file:
        print("error: evaluate needs --test PATH (a canonical file or folder: every line is test)", file=sys.stderr)
        return 2
    return run(settings, options, test_file=options.test_file)


def report(settings: Settings, options) -> int:
    path = report_folder(settings.warehouse.parent, settings.routing_dataset) / "report.md"
    if not path.exists():
        print(
            f"error: no report at {path}: run `adri routing run --dataset {settings.routing_dataset}` first",
            file=sys.stderr,
        )
        return 2
    print(path.read_text(encoding="utf-8"))
    return 0


def table(settings: Settings, options) -> int:
    """The dataset's last run as a docs "Measured here" table (routing/measured.py), printed or written
    into `--doc` between its markers."""
    from adri_pipeline.routing import measured
    from adri_pipeline.routing.results import BenchmarkReport

    path = report_folder(settings.warehouse.parent, settings.routing_dataset) / "metrics.json"
    if not path.exists():
        print(
            f"error: no run at {path}: run `adri routing run --dataset {settings.routing_dataset}` first",
            file=sys.stderr,
        )
        return 2
    block = measured.table(BenchmarkReport.read(path), settings.routing_dataset)
    if options.doc is None:
        print(block)
        return 0
    measured.write_into(options.doc, settings.routing_dataset, block)
    print(f"{options.doc}: the table of routing {settings.routing_dataset} written from {path}")
    return 0
