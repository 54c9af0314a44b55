"""`adri` command line: classify, agree, suggest, findings, export, review, snapshot, register,
launch, code, routing, mirror, llm, demo. Every flag comes from a field that declares it (adri_pipeline/flags.py):
the settings from `Settings`, each command's own options from its model below. Portuguese aliases
for the flags users know."""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, Field

from adri_pipeline.classification.runner import ESTIMATE_SAMPLE
from adri_pipeline.config import Settings
from adri_pipeline.flags import Flag, actions_of, add_flags, path_flags
from adri_pipeline.stopping import install_stop_handlers

PositiveInt = Annotated[int, Field(ge=1)]
Width = Annotated[float, Field(gt=0, lt=1)]  # an interval's width, as a share


class NoOptions(BaseModel):
    pass


OVERWRITE = Flag(
    aliases=("--sobrescrever",),
    help="replace the output file if it exists (never the warehouse, "
    "its snapshot, a corpus, a codebook or the coders' file)",
)


class ClassifyOptions(BaseModel):
    limit: Annotated[PositiveInt | None, Flag(aliases=("--limite",), help="only the first N documents (N >= 1)")] = None
    replace_documents: Annotated[
        bool, Flag(help="a document id already stored with another text takes this file's text")
    ] = False
    estimate: Annotated[
        bool,
        Flag(aliases=("--estimar",), help=f"classify {ESTIMATE_SAMPLE} documents and project the time for the rest"),
    ] = False


def cmd_classify(settings: Settings, options: ClassifyOptions) -> int:
    from adri_pipeline.classification.service import classify_and_summarize
    from adri_pipeline.dagster_instance import report_cli_classification
    from adri_pipeline.progress import DocumentsDone

    progress = DocumentsDone()
    committed = []  # the run, once its answers, results and snapshot are written
    try:
        summary = classify_and_summarize(
            settings,
            limit=options.limit,
            estimate=options.estimate,
            replace_documents=options.replace_documents,
            progress=progress,
            committed=committed.append,
        )
    finally:
        progress.close()
    recorded = [report_cli_classification(settings, run) for run in committed]  # in Dagster's asset history
    print("\n".join(summary.lines() + [line for line in recorded if line]))
    if summary.interrupted:
        return 143 if "SIGTERM" in summary.stopped else 130
    return 1 if summary.all_failed or summary.stopped else 0


def read_context(settings: Settings):
    """The one context a command reads with: the settings' codebook, validated, and its warehouse."""
    from adri_pipeline.classification.context import RunContext

    return RunContext.load(settings)


class AgreeOptions(BaseModel):
    cv: Annotated[
        bool,
        Flag(
            aliases=("--validacao-cruzada",),
            help="also the embedded model trained on the codes, cross-validated, and zero-shot",
        ),
    ] = False
    folds: Annotated[PositiveInt, Flag(help="cross-validation folds")] = 5
    confusion: Annotated[bool, Flag(aliases=("--confusao",), help="print the confusion tables")] = False


def cmd_agree(settings: Settings, options: AgreeOptions) -> int:
    """Agreement per (model, variable) against the coders, with confusion tables; `--cv` adds the
    trained embedded model cross-validated and the zero-shot model on the coded documents."""
    import polars as pl

    from adri_pipeline.classification.coders import agreement
    from adri_pipeline.classification.findings import in_percent

    if settings.coders is None:
        print("error: give the coders' file (--coders or ADRI_CODERS)", file=sys.stderr)
        return 2
    result = agreement(read_context(settings), cross_validated=options.cv, folds=options.folds)
    with pl.Config(tbl_rows=200, tbl_width_chars=160, fmt_str_lengths=60, tbl_hide_dataframe_shape=True):
        print(f"{result.documents} coded documents in {settings.coders}")
        print(in_percent(result.table))
        if result.round is not None:
            print("\ncoder vs coder, blind pass (kappa: Cohen's, mean over pairs; alpha: Krippendorff's, nominal)")
            print(in_percent(result.round.between_coders))
            if result.round.models_by_round["round"].n_unique() > 1:
                print("\nthe models against each round's own gold")
                print(in_percent(result.round.models_by_round))
            print("\nthe gold the models above are measured against, by where it comes from")
            print(result.round.gold_sources)
            if result.round.unresolved.height:
                print(
                    f"\n{result.round.unresolved.height} disagreement(s) not adjudicated yet (no gold): "
                    f"adri code start --pass adjudication"
                )
                print(result.round.unresolved)
            print("\nthe coders' evidence, audited as the model's (literal, approximate, absent, waived)")
            print(result.round.coder_audits)
        if options.confusion:
            for (model, variable), table in result.confusions.items():
                print(f"\n{model} / {variable} (rows: coder)")
                print(table)
    return 0


class SuggestOptions(BaseModel):
    n: Annotated[PositiveInt, Flag(aliases=("--limite",), help="how many documents")] = 20
    draw_seed: Annotated[int, Flag(name="--seed", help="for the random draw when nothing is coded yet")] = 20261130


def cmd_suggest(settings: Settings, options: SuggestOptions) -> int:
    """The uncoded documents where a code helps most, with the reason (or a seeded random draw)."""
    from adri_pipeline.classification.coders import suggest

    for item in suggest(read_context(settings), n=options.n, seed=options.draw_seed):
        print(f"{item.doc_id}\t{item.reason}\t{item.title[:90]}")
    return 0


class CodeOptions(BaseModel):
    action: Annotated[Literal["start", "pull", "draw", "pending"], Flag(positional=True)]
    round: Annotated[str, Flag(aliases=("--rodada",), required=("code",), help="the round's name, e.g. round-1")] = ""
    pass_name: Annotated[
        Literal["blind", "review", "adjudication"],
        Flag(
            name="--pass",
            aliases=("--etapa",),
            actions=("start",),
            help="blind (two coders or more, no model answer), review "
            "(the principal model's answers shown), adjudication (the "
            "disagreements)",
        ),
    ] = "blind"
    coders_list: Annotated[
        str | None,
        Flag(
            name="--coder",
            aliases=("--codificador",),
            actions=("start",),
            help="the coders' Label Studio e-mails, comma-separated",
        ),
    ] = None
    ids: Annotated[
        Path | None,
        Flag(
            actions=("start", "draw"),
            path="file",
            help="the round's document ids, one per "
            "line (default: what adri suggest picks); draw: ids drawn at random elsewhere, "
            "recorded",
        ),
    ] = None
    n: Annotated[
        PositiveInt, Flag(aliases=("--limite",), actions=("start",), help="how many documents adri suggest picks")
    ] = 10
    random: Annotated[
        PositiveInt | None,
        Flag(
            aliases=("--aleatorio",),
            actions=("start", "draw"),
            help="this many documents drawn "
            "at random from the classified corpus, recorded so corrected findings "
            "can use them",
        ),
    ] = None
    seed: Annotated[int, Flag(aliases=("--semente",), actions=("start", "draw"), help="the random draw's seed")] = 0
    stratify: Annotated[
        Literal["year", "source"] | None,
        Flag(
            aliases=("--estratificar",),
            actions=("start", "draw"),
            help="draw within each year or source, weights recorded",
        ),
    ] = None
    out: Annotated[
        Path | None,
        Flag(
            actions=("pull", "draw"),
            path="output",
            help="pull: the round's coders' CSV (default: <warehouse folder>/coding/"
            "<round>.csv); draw: its ids file (<round>.ids there)",
        ),
    ] = None
    overwrite: Annotated[bool, replace(OVERWRITE, actions=("pull", "draw"))] = False


def cmd_code(settings: Settings, options: CodeOptions) -> int:
    """A coding round in Label Studio: open a pass, or pull every code back (classification/rounds.py)."""
    from adri_pipeline import paths
    from adri_pipeline.classification import rounds

    paths.file_name(options.round, "--round")
    context = read_context(settings)
    if options.action == "pull":
        pulled = rounds.pull(context, options.round, options.out)
        per = pulled.codes.group_by("pass", "coder", maintain_order=True).len()
        for pass_name, coder, codes in per.iter_rows():
            print(f"{pass_name}\t{coder or '(any)'}\t{codes} codes")
        print(
            f"{pulled.uncoded_blind_tasks} blind task(s) not coded yet; {pulled.disagreements.height} "
            f"disagreement(s) between blind coders"
        )
        print(f"wrote {pulled.csv}: adri agree --coders {pulled.csv}")
        return 0
    if options.action == "pending":
        return _code_pending(context, options.round)
    if options.action == "draw" or options.random:
        sample = _code_draw(context, options)
        if options.action == "draw":
            return 0
    coders = [c.strip() for c in (options.coders_list or "").split(",") if c.strip()]
    ids = rounds.read_ids(options.ids) if options.ids else None
    if options.random:
        ids = list(sample["doc_id"])
    opened = rounds.start(context, options.round, options.pass_name, coders, ids, options.n)
    print(f"round {opened.round}, {opened.pass_name} pass: {opened.documents} document(s)")
    for project in opened.projects:
        print(f"{project.coder or '(any coder)'}\t{project.url}")
    return 0


def _code_draw(context, options: CodeOptions):
    """`adri code draw` (or `start --random N`): the round's random documents, drawn and recorded;
    `draw --ids FILE` records a uniform draw made elsewhere (the shipped pilot round's)."""
    from adri_pipeline import paths
    from adri_pipeline.classification import rounds

    settings = context.settings
    given = rounds.read_ids(options.ids) if options.ids and options.action == "draw" else None
    if not options.random and given is None:
        raise SystemExit("error: adri code draw needs --random N (how many documents to draw) or --ids FILE")
    if options.ids and options.random:
        raise SystemExit("error: --random draws the round's documents; give it or --ids, not both")
    if options.action == "start":
        rounds.reach_label_studio(settings)
    sample = rounds.draw_random(context, options.round, options.random or 0, options.seed, options.stratify, given)
    print(
        f"round {options.round}: {sample.height} document(s) drawn at random (seed {options.seed}"
        f"{', within each ' + options.stratify if options.stratify else ''}) of {sample['population'][0]} "
        "classified; recorded for corrected findings"
    )
    if sample["strata_left_out"][0]:
        print(
            f"warning: no document drawn from {options.stratify} {sample['strata_left_out'][0]} (too few for every "
            "stratum): recorded; those documents cannot be corrected for"
        )
    if options.action == "draw":
        path = options.out or Path(settings.warehouse).parent / "coding" / f"{options.round}.ids"
        path.parent.mkdir(parents=True, exist_ok=True)
        paths.write_text(path, "".join(f"{doc_id}\n" for doc_id in sample["doc_id"]))
        print(
            f"wrote {path}: code these documents (adri code start --round {options.round} --ids {path}, "
            f"or by hand in a coders' CSV with round {options.round})"
        )
    return sample


def _code_pending(context, round_name: str) -> int:
    """`adri code pending`: the round's documents without gold, per variable, disputed or not coded."""
    from adri_pipeline.classification import rounds

    missing = rounds.pending(context, round_name)
    for doc_id, variable, reason, values in missing.iter_rows():
        print(f"{doc_id}\t{variable}\t{reason}{chr(9) + values if values else ''}")
    disputed = int((missing["reason"] == "disputed").sum())
    print(
        f"round {round_name}: {missing.height} (document, variable) pair(s) without gold: {disputed} disputed "
        f"(adjudicate: adri code start --round {round_name} --pass adjudication), {missing.height - disputed} not "
        "coded; until then corrected findings bound their intervals (docs/findings.md)"
    )
    return 0


class ReviewOptions(BaseModel):
    compare: Annotated[str | None, Flag(help="two models to compare: 'modelA,modelB'")] = None


def cmd_review(settings: Settings, options: ReviewOptions) -> int:
    """Write the static review site and print the index page's path."""
    from adri_pipeline.reports.review import write_review

    compare = tuple(options.compare.split(",", 1)) if options.compare else None
    print(write_review(read_context(settings), compare=compare).index)
    return 0


OF_SOURCE = Flag(
    name="--source",
    aliases=("--fonte",),
    help="only the documents read from this corpus file (its path as given to classify, or its name)",
)
ANSWERS_OF = Flag(
    name="--model",
    aliases=("--modelo",),
    help="whose answers (default: the principal model, else the latest classification run's)",
)


class FindingsOptions(BaseModel):
    answers_of: Annotated[str | None, ANSWERS_OF] = None
    by: Annotated[Literal["year", "source"] | None, Flag(aliases=("--por",), help="shares per year or source")] = None
    cross: Annotated[
        str | None, Flag(aliases=("--cruzar",), help="two variables against each other: 'abordagem,subarea'")
    ] = None
    compare: Annotated[
        str | None, Flag(aliases=("--comparar",), help="a second answer set beside it: a model name, or 'coders'")
    ] = None
    width: Annotated[
        Width,
        Flag(
            aliases=("--largura",),
            help="corrected findings: the interval width (0.10: ten points) to plan how many more to code for",
        ),
    ] = 0.10
    labels: Annotated[
        Path | None,
        Flag(
            aliases=("--rotulos",),
            path="output",
            help="corrected findings: write the model's and the coders' labels they are computed from (CSV)",
        ),
    ] = None
    of_source: Annotated[str | None, OF_SOURCE] = None
    models: Annotated[
        bool,
        Flag(
            aliases=("--modelos",),
            help="corrected findings: every model with results, ranked "
            "by how tight its corrected intervals are, and its "
            "errors against the gold",
        ),
    ] = False
    overwrite: Annotated[bool, OVERWRITE] = False


def cmd_findings(settings: Settings, options: FindingsOptions) -> int:
    """What the corpus says: per variable the share of documents with each value (95 % interval),
    optionally by year or source, one variable against another, and a second answer set beside it."""
    from adri_pipeline.classification.queries import findings
    from adri_pipeline.reports.findings_text import findings_lines

    cross = tuple(options.cross.split(",", 1)) if options.cross else None
    if cross is not None and len(cross) != 2:
        raise SystemExit("error: --cross needs two variables: 'abordagem,subarea'")
    found = findings(
        read_context(settings),
        model=options.answers_of,
        compare=options.compare,
        cross_variables=cross,
        width=options.width,
        source=options.of_source,
    )
    print("\n".join(findings_lines(found, options.by, cross)))
    if options.labels:
        if found.corrected is None:
            raise SystemExit(
                "error: --labels: no corrected findings (they need a random coding round, "
                "adri code start --random N, and the coders' file, --coders)"
            )
        from adri_pipeline import paths

        with paths.replacing(options.labels) as written:
            found.corrected.labels.write_csv(written)
        print(f"wrote {options.labels}: the labels the corrected shares were computed from")
    if options.models:
        from adri_pipeline.reports.findings_text import models_lines

        compared = found.models  # findings ranks the models whenever it corrects
        if compared is None:
            raise SystemExit(
                "error: --models: no corrected findings (they need a random coding round, "
                "adri code start --random N, and the coders' file, --coders)"
            )
        print("\n" + "\n".join(models_lines(compared)))
    return 0


class ExportOptions(BaseModel):
    format: Annotated[Literal["csv", "parquet", "xlsx"], Flag(aliases=("--formato",), required=("export",))] = "csv"
    output: Annotated[
        Path | None, Flag(aliases=("--saida",), required=("export",), path="output", help="the file to write")
    ] = None
    overwrite: Annotated[bool, OVERWRITE] = False
    answers_of: Annotated[str | None, ANSWERS_OF] = None
    evidence: Annotated[
        bool, Flag(aliases=("--evidencia",), help="also each answer's evidencia, audit status, field and offsets")
    ] = False
    of_source: Annotated[str | None, OF_SOURCE] = None


def cmd_export(settings: Settings, options: ExportOptions) -> int:
    """One row per document, one column per variable, with the document's metadata."""
    from adri_pipeline.classification.queries import export_results

    path, rows = export_results(
        read_context(settings),
        options.format,
        options.output,
        model=options.answers_of,
        evidence=options.evidence,
        source=options.of_source,
    )
    print(f"{path}: {rows} documents")
    return 0


def cmd_snapshot(settings: Settings, options: NoOptions) -> int:
    from adri_pipeline.warehouse import Warehouse

    print(Warehouse(settings.warehouse).existing().publish_snapshot())
    return 0


class SqlOptions(BaseModel):
    command: Annotated[str | None, Flag(aliases=("-c", "--comando"), help="run these statements and leave")] = None
    file: Annotated[
        Path | None,
        Flag(
            aliases=("--arquivo",),
            path="file",
            help="run the statements in this file and leave (e.g. docs/queries.sql)",
        ),
    ] = None
    version: Annotated[bool, Flag(aliases=("--versao",), help="the DuckDB version that reads the snapshot")] = False


def cmd_sql(settings: Settings, options: SqlOptions) -> int:
    """An SQL shell on the analyst snapshot, with the DuckDB the project pins (warehouse/shell.py)."""
    import duckdb

    from adri_pipeline.errors import AdriError
    from adri_pipeline.warehouse import Warehouse
    from adri_pipeline.warehouse.shell import SnapshotMissing, interactive, open_snapshot, run_text

    if options.version:
        print(f"DuckDB {duckdb.__version__}")
        return 0
    snapshot = Warehouse(settings.warehouse).snapshot_path
    try:
        con = open_snapshot(snapshot)
    except SnapshotMissing as exc:
        raise AdriError(str(exc)) from None
    with con:
        if options.command is None and options.file is None:
            return interactive(con, snapshot)
        text = options.command if options.command is not None else options.file.read_text(encoding="utf-8")
        return 1 if run_text(con, text) else 0


def cmd_register(settings: Settings, options: NoOptions) -> int:
    """Register the shards of the corpus's documents as dynamic partitions on the $DAGSTER_HOME
    instance (what new_documents_sensor does under the daemon), then print the range to materialize."""
    import dagster as dg

    from adri_pipeline.defs.classification.corpus import register_documents

    with dg.DagsterInstance.get() as instance:
        shards, new = register_documents(instance, settings)
    print(f"{len(shards)} shards of documents registered as partitions of 'document_shards' ({new} new)")
    if shards:
        print(
            f"dagster asset materialize -m adri_pipeline.definitions --select classifications "
            f"--partition-range '{shards[0]}...{shards[-1]}'"
        )
    return 0


class LaunchOptions(BaseModel):
    dagster: Annotated[str, Flag(help="the Dagster webserver's address")] = "http://127.0.0.1:3000"


def cmd_launch(settings: Settings, options: LaunchOptions) -> int:
    """With the shared ledger: the deployment classifies its corpus as runs side by side."""
    from adri_pipeline.defs.launcher import launch_classification

    run_id = launch_classification(settings, options.dagster)
    print(
        f"register_corpus_job run {run_id} submitted to {options.dagster}: the range's runs follow it "
        f"(shard_runs_sensor), the results once they end; watch them at {options.dagster.rstrip('/')}/runs"
    )
    return 0


class RoutingOptions(BaseModel):
    action: Annotated[
        Literal["build", "pilot", "run", "evaluate", "report", "cross", "serve", "table", "calibrate"],
        Flag(positional=True),
    ]
    doc: Annotated[
        Path | None,
        Flag(
            actions=("table",),
            path="edited",
            help="write the table into this doc, between its "
            "`<!-- measured: routing DATASET -->` and `<!-- /measured -->` markers",
        ),
    ] = None
    candidate: Annotated[
        str | None,
        Flag(
            actions=("serve", "calibrate"),
            help="the candidate to fit, calibrate and serve on POST /v1/systemone (default: the first of --candidates)",
        ),
    ] = None
    host: Annotated[str, Flag(actions=("serve",), help="the address to listen on")] = "127.0.0.1"
    port: Annotated[int, Flag(actions=("serve",), help="the port (0 picks a free one)")] = 8000
    key_env: Annotated[str | None, Flag(actions=("serve",), help="require Authorization: Bearer $VAR from clients")] = (
        None
    )
    budget: Annotated[
        float,
        Field(gt=0),
        Flag(
            aliases=("--prazo",),
            actions=("serve",),
            help="seconds each answer may take; past them 503 with the reason (default 10)",
        ),
    ] = 10.0
    team: Annotated[
        Path | None,
        Flag(
            aliases=("--equipe",),
            actions=("calibrate",),
            required=("calibrate",),
            path="file-or-folder",
            help="the team's labelled turns (canonical JSON lines, 50-200 of "
            "its catalogue) that recertify the candidate's threshold for that catalogue",
        ),
    ] = None
    team_calibration: Annotated[
        Path | None,
        Flag(
            aliases=("--calibracao-equipe",),
            actions=("serve",),
            path="file",
            help="a file `adri routing calibrate --team` wrote: serve with its thresholds, drift reference and sets",
        ),
    ] = None
    clarify: Annotated[
        bool,
        Flag(
            aliases=("--desambiguar",),
            actions=("serve",),
            help="conformal prediction sets: an "
            "unsure D2 choice between 2-3 options answers desambiguar, naming them in "
            "x_prediction_sets; an empty or larger set abstains",
        ),
    ] = False
    fitted_on: Annotated[
        str | None, Flag(actions=("cross",), help="datasets to fit on, comma-separated (default --dataset)")
    ] = None
    tested_on: Annotated[
        str | None,
        Flag(
            actions=("cross",),
            help="datasets or canonical files to test on, comma-separated (default: the fitted-on ones)",
        ),
    ] = None
    test_file: Annotated[
        str | None,
        Flag(
            name="--test",
            actions=("evaluate", "run"),
            help="evaluate: the only test, a canonical file whose "
            "every line is test or another shipped dataset (its "
            "test split); run: one more out-of-source test",
        ),
    ] = None
    llm_limit: Annotated[
        PositiveInt | None,
        Flag(
            aliases=("--limite-llm",),
            actions=("run", "evaluate"),
            help="an LLM baseline answers only the first N calibration and test examples of each task",
        ),
    ] = None
    benchmark_seed: Annotated[
        int, Flag(name="--seed", actions=("build", "run", "evaluate"), help="the benchmark's random state")
    ] = 13


def cmd_routing(settings: Settings, options: RoutingOptions) -> int:
    from adri_pipeline.routing import commands

    return getattr(commands, options.action)(settings, options)


class MirrorOptions(BaseModel):
    action: Annotated[Literal["replay", "evaluate", "savings", "approve"], Flag(positional=True)]
    point: Annotated[str | None, Flag(positional=True, actions=("approve",), help="the decision point to approve")] = (
        None
    )
    replay_point: Annotated[
        Literal["page_type", "html_is_enough"],
        Flag(name="--point", actions=("replay",), help="which labelled replay to run"),
    ] = "page_type"
    replay_mirror: Annotated[
        str | None,
        Flag(
            name="--mirror",
            aliases=("--espelho",),
            actions=("replay",),
            help="the mirror is this System One server, jev:URL[#MODEL]",
        ),
    ] = None
    evaluation: Annotated[
        Path | None, Flag(actions=("approve",), path="file", help="the evaluation report (mirror_evaluation.json)")
    ] = None
    mode: Annotated[
        Literal["control", "veto", "warn"] | None,
        Flag(actions=("approve",), help="a weaker acting mode than the one recommended"),
    ] = None
    blind_sheet: Annotated[
        Path | None, Flag(actions=("savings",), path="output", help="write a blinded quality sheet (CSV) and its key")
    ] = None
    quality: Annotated[Path | None, Flag(actions=("savings",), path="file", help="the graded blinded sheet")] = None
    overwrite: Annotated[bool, replace(OVERWRITE, actions=("replay", "savings"))] = False
    as_json: Annotated[
        bool, Flag(name="--json", actions=("evaluate",), help="print the whole evaluation as JSON instead of a summary")
    ] = False


def cmd_mirror(settings: Settings, options: MirrorOptions) -> int:
    from adri_pipeline.mirror import commands

    return getattr(commands, options.action)(settings, options)


def cmd_demo(settings: Settings, options: NoOptions) -> int:
    """The main job end to end on the project's own sample data with the embedded default."""
    from adri_pipeline.demo import run_demo

    return run_demo(settings)


class LlmOptions(BaseModel):
    action: Annotated[Literal["serve"], Flag(positional=True)]
    port: Annotated[int, Flag(help="the port")] = 8080
    slots: Annotated[PositiveInt, Flag(aliases=("--vagas",), help="parallel slots (llama-server -np)")] = 2


def cmd_llm(settings: Settings, options: LlmOptions) -> int:
    """Serve Gemma 3 270M with llama.cpp's llama-server on 127.0.0.1, in the foreground."""
    from adri_pipeline.models import llama_server

    try:
        return llama_server.serve(options.port, options.slots)
    except KeyboardInterrupt:
        print("llama-server stopped", file=sys.stderr)
        return 0


class UiOptions(BaseModel):
    port: Annotated[int, Flag(aliases=("--porta",), help="the port on 127.0.0.1")] = 3000


def cmd_ui(settings: Settings, options: UiOptions) -> int:
    """The Dagster UI (`dagster dev`) on loopback, stopped whole by Ctrl+C or SIGTERM (adri_pipeline/ui.py)."""
    from adri_pipeline import ui

    return ui.serve(options.port)


@dataclass(frozen=True)
class Command:
    name: str
    run: Callable[[Settings, BaseModel], int]
    options: type[BaseModel]
    help: str
    aliases: tuple[str, ...] = ()
    action_help: dict[str, str] = field(default_factory=dict)  # a command with actions: one line for each
    # it writes what analysts query (coding rounds, routing tables, the shadow log): the snapshot is
    # republished once it succeeds, so it is never older than the warehouse (classify publishes its own)
    publishes_snapshot: bool = False


COMMANDS = (
    Command("classify", cmd_classify, ClassifyOptions, "classify a corpus against a codebook", ("classificar",)),
    Command("agree", cmd_agree, AgreeOptions, "agreement and kappa against human coders", ("concordancia",)),
    Command("suggest", cmd_suggest, SuggestOptions, "which documents to code next", ("sugerir",)),
    Command(
        "code",
        cmd_code,
        CodeOptions,
        "a coding round in Label Studio: start a pass, pull the codes",
        ("codificar",),
        publishes_snapshot=True,
        action_help={
            "start": "open a pass of the round in Label Studio",
            "pull": "pull every code of the round back into a CSV",
            "draw": "only draw the round's random documents (<round>.ids)",
            "pending": "the round's documents without gold, per variable: to adjudicate or code",
        },
    ),
    Command("review", cmd_review, ReviewOptions, "write the static review pages (HTML)", ("revisar",)),
    Command("findings", cmd_findings, FindingsOptions, "what the corpus says: shares per variable", ("achados",)),
    Command("export", cmd_export, ExportOptions, "results as one row per document (csv, parquet, xlsx)", ("exportar",)),
    Command("snapshot", cmd_snapshot, NoOptions, "republish the analyst snapshot"),
    Command("sql", cmd_sql, SqlOptions, "an SQL shell on the analyst snapshot (DuckDB, read-only)", ("consulta",)),
    Command("register", cmd_register, NoOptions, "register corpus documents as Dagster partitions"),
    Command(
        "launch",
        cmd_launch,
        LaunchOptions,
        "with the shared ledger: classify the deployment's corpus as Dagster runs side by side (SCALING.md)",
        ("lancar",),
    ),
    Command(
        "routing",
        cmd_routing,
        RoutingOptions,
        "JEV typed-decision routing benchmark",
        (),
        publishes_snapshot=True,
        action_help={
            "build": "build the dataset's canonical examples and freeze its test split",
            "pilot": "choose each candidate's production batch size on dev examples",
            "run": "the benchmark: in source, out of source, latency, verdicts",
            "evaluate": "the benchmark on --test files only",
            "report": "print the dataset's last report",
            "cross": "fit on some datasets, test on others: one table",
            "serve": "fit, calibrate and serve one candidate on POST /v1/systemone",
            "table": 'the last run as a docs "Measured here" table, with its date, commit and test split hash',
            "calibrate": "recertify a candidate's threshold on a team's own labelled turns (--team) for serve",
        },
    ),
    Command(
        "mirror",
        cmd_mirror,
        MirrorOptions,
        "mirror decision models: shadow replay and evaluation",
        (),
        publishes_snapshot=True,
        action_help={
            "replay": "run a labelled replay through the gate in shadow, writing the shadow log",
            "evaluate": "judge the shadow log: agreement, savings, the recommended mode",
            "savings": "what the mirror saved, and a blinded quality sheet",
            "approve": "promote a decision point to the mode its evaluation recommends",
        },
    ),
    Command(
        "llm",
        cmd_llm,
        LlmOptions,
        "a real language model here: llama-server with Gemma 3 270M (`make llm`)",
        (),
        {"serve": "serve Gemma 3 270M on 127.0.0.1, in the foreground, until Ctrl+C"},
    ),
    Command("demo", cmd_demo, NoOptions, "run the main job on the sample data (embedded default)"),
    Command("ui", cmd_ui, UiOptions, "the Dagster UI on 127.0.0.1 (`make ui`), stopped whole by Ctrl+C or SIGTERM"),
)


def build_parser() -> argparse.ArgumentParser:
    """Each command's flags: its options model's, then the settings that declare it (flags.add_flags)."""
    parser = argparse.ArgumentParser(prog="adri", description=__doc__)
    parser.add_argument("-v", "--verbose", action="store_true")
    sub = parser.add_subparsers(dest="command", required=True)
    for command in COMMANDS:
        each = sub.add_parser(command.name, aliases=list(command.aliases), help=command.help)
        each.set_defaults(command_spec=command)
        actions = actions_of(command.options)
        if not actions:
            add_flags(each, command.name, command.options, every_field=True)
            add_flags(each, command.name, Settings)
            continue
        per_action = each.add_subparsers(dest="action", required=True, metavar="{" + ",".join(actions) + "}")
        for action in actions:
            one = per_action.add_parser(action, help=command.action_help.get(action))
            add_flags(one, command.name, command.options, every_field=True, action=action)
            add_flags(one, command.name, Settings)
    return parser


def parsed(argv: list[str] | None) -> tuple[Command, Settings, BaseModel, bool]:
    """(command, settings: flags over ADRI_* over defaults, the command's options, verbose)."""
    args = build_parser().parse_args(argv)
    command: Command = args.command_spec
    given = {name: value for name, value in vars(args).items() if value is not None}
    settings = Settings.load(**{name: given.get(name) for name in Settings.model_fields})
    options = command.options(**{name: given[name] for name in command.options.model_fields if name in given})
    return command, settings, options, args.verbose


def check_paths(command: Command, settings: Settings, options: BaseModel) -> None:
    """Every file or folder the user gave this command (a flag or its ADRI_* variable), checked by the
    kind its Flag declares before anything runs (adri_pipeline/paths.py): one line naming the flag."""
    from adri_pipeline import paths

    action = getattr(options, "action", None)
    for model, values, own in ((Settings, settings, False), (command.options, options, True)):
        for name, flag, kind in path_flags(model, command.name, action, every_field=own):
            value = getattr(values, name)
            if value is None or name not in values.model_fields_set:
                continue
            if kind == "output":
                paths.check_output(flag, value, settings, getattr(options, "overwrite", False))
            else:
                paths.check(kind, flag, value)


def main(argv: list[str] | None = None) -> int:
    from pydantic import ValidationError

    from adri_pipeline.errors import AdriError

    try:
        command, settings, options, verbose = parsed(argv)
    except ValidationError as exc:  # an ADRI_* variable the settings refuse
        print(f"error: {exc}", file=sys.stderr)
        return 2
    logging.basicConfig(
        level=logging.INFO if verbose else logging.WARNING, format="%(levelname)s %(name)s: %(message)s"
    )
    install_stop_handlers()
    try:
        check_paths(command, settings, options)
        code = command.run(settings, options)
        if code == 0 and command.publishes_snapshot:
            republish_snapshot(settings)
        return code
    except KeyboardInterrupt as exc:  # where a run cannot stop on its own terms: start-up, a second Ctrl+C
        which = "SIGTERM" if exc.args == ("SIGTERM",) else "Ctrl+C"
        print(f"interrupted ({which}): what was committed is kept; run the same command to go on", file=sys.stderr)
        return 143 if which == "SIGTERM" else 130
    except AdriError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


def republish_snapshot(settings: Settings) -> None:
    """After a command that wrote what analysts query, the snapshot holds it too (when there is a
    warehouse: `routing serve` or `code start` on a fresh folder may not have made one)."""
    from adri_pipeline.warehouse import Warehouse

    warehouse = Warehouse(settings.warehouse)
    if warehouse.path.exists():
        warehouse.publish_snapshot()


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
