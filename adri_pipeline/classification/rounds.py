"""A coding round in Label Studio, as a research team runs it: `adri code start` opens a pass,
`adri code pull` reads every code back into the warehouse and writes the round's coders' CSV, which
`adri agree`, `--coders` training and `adri suggest` read as any coders' file.

How a round keeps the first pass blind (ADR 0011 puts the validation sample first):

- each coder gets a blind project of their own: nobody else's annotation is in it, and it has no
  predictions. Label Studio also hides predictions there (`show_collab_predictions` off);
- the model's answers reach Label Studio only with the review pass, and `start --pass review`
  refuses while any blind task is not yet coded. Adjudication waits for the same.

The adjudication pass holds only the documents where the blind coders disagree. Each is shown with
what every coder answered, and the variables they agreed on are pre-filled. Only the disputed
variables are read back from it.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl

from adri_pipeline.classification.audit import DocumentIndex, audit_evidence
from adri_pipeline.classification.codebook import Codebook
from adri_pipeline.classification.coders import coded_documents, holdout_ids, id_lines, suggest
from adri_pipeline.classification.coding import (
    ADJUDICATION,
    BLIND,
    PASSES,
    REVIEW,
    audit_codes,
    disagreements,
    gold_codes,
    without_gold,
)
from adri_pipeline.classification.context import RunContext
from adri_pipeline.classification.corpus import Document
from adri_pipeline.classification.corrected import draw, population_hash
from adri_pipeline.classification.label_studio import LabelStudio
from adri_pipeline.classification.labeling import Code, Span, codes_of, labeling_config, result_items, task_data
from adri_pipeline.classification.queries import answer_set
from adri_pipeline.classification.service import recorded_model
from adri_pipeline.config import Settings
from adri_pipeline.errors import AdriError
from adri_pipeline.paths import file_name, replacing
from adri_pipeline.warehouse import (
    Warehouse,
    coding_projects,
    coding_samples,
    read_codes,
    read_documents,
    read_results,
    store_codes,
    store_coding_project,
    store_coding_sample,
)

log = logging.getLogger(__name__)

CODE_COLUMNS = (
    "doc_id",
    "variable",
    "value",
    "evidencia",
    "coder",
    "pass",
    "round",
    "annotated_at",
    "audit_status",
    "audit_field",
    "evidence_start",
    "evidence_end",
)  # the round's coders' CSV
# a pulled annotation's codes, before the audit
CODE_SCHEMA = {
    "round": pl.String,
    "pass": pl.String,
    "coder": pl.String,
    "doc_id": pl.String,
    "variable": pl.String,
    "value": pl.String,
    "evidencia": pl.String,
    "span_field": pl.String,
    "span_start": pl.Int32,
    "span_end": pl.Int32,
    "annotation_id": pl.Int64,
    "project_id": pl.Int64,
    "annotated_at": pl.String,
}
ANY_CODER = ""  # a project not made for one coder (review, adjudication): whoever annotates is recorded


class RoundError(AdriError, ValueError):
    """A round asked for in an order or with documents its method does not allow."""


@dataclass
class OpenedProject:
    coder: str
    project_id: int
    url: str


@dataclass
class OpenedPass:
    round: str
    pass_name: str
    documents: int
    projects: list[OpenedProject] = field(default_factory=list)


@dataclass
class PulledRound:
    round: str
    csv: Path
    codes: pl.DataFrame  # CODE_COLUMNS
    uncoded_blind_tasks: int
    disagreements: pl.DataFrame  # coding.disagreements


def _round_documents(context: RunContext, doc_ids: list[str] | None, n: int) -> list[Document]:
    """The round's documents: those given, else those `adri suggest` picks; never a reserved one."""
    settings = context.settings
    reserved = holdout_ids(settings)
    if doc_ids is None:
        doc_ids = [s.doc_id for s in suggest(context, n=n)]
    held = sorted(set(doc_ids) & reserved)
    if held:
        raise RoundError(
            f"{len(held)} document(s) of the round are reserved for independent evaluation in "
            f"{settings.holdout}: {held[:5]}; they are never coded"
        )
    if not doc_ids:
        raise RoundError("no documents for the round (give --ids, or a corpus with uncoded documents)")
    return coded_documents(settings, context.warehouse, list(dict.fromkeys(doc_ids)), settings.coders_corpus)


def _open(
    client: LabelStudio,
    warehouse: Warehouse,
    codebook: Codebook,
    opened: OpenedPass,
    coder: str,
    tasks: list[dict],
    show_predictions: bool,
    model: str = "",
    adjudication: bool = False,
) -> None:
    title = f"{opened.round} · {opened.pass_name}" + (f" · {coder}" if coder else "")
    description = (
        f"adri coding round {opened.round!r}, {opened.pass_name} pass, codebook {codebook.name} "
        f"v{codebook.version}" + (f", for {coder} only" if coder else "")
    )
    project = client.create_project(
        title, labeling_config(codebook, adjudication=adjudication), show_predictions, description
    )
    client.import_tasks(project, tasks)
    store_coding_project(
        warehouse,
        {
            "round": opened.round,
            "pass": opened.pass_name,
            "coder": coder,
            "project_id": project,
            "url": client.labeling_url(project),
            "doc_ids": [t["data"]["doc_id"] for t in tasks],
            "codebook_hash": codebook.content_hash,
            "model": model,
        },
    )
    opened.projects.append(OpenedProject(coder, project, client.labeling_url(project)))


def reach_label_studio(settings: Settings) -> LabelStudio:
    """The Label Studio of the settings, once it has answered as the token's user: a round that draws
    its documents asks this first, so a server down or a token refused records no draw."""
    client = LabelStudio(settings.label_studio_url, settings.label_studio_token)
    client.user_emails()
    return client


def start(
    context: RunContext,
    round_name: str,
    pass_name: str,
    coders: list[str],
    doc_ids: list[str] | None = None,
    n: int = 10,
) -> OpenedPass:
    """Open one pass of a round in Label Studio (see the module's docstring for what each pass holds)."""
    if pass_name not in PASSES:
        raise RoundError(f"pass {pass_name!r} is not one of {', '.join(PASSES)}")
    settings, codebook, warehouse = context.settings, context.codebook, context.warehouse
    projects = coding_projects(warehouse, round_name)
    blind = projects.filter(pl.col("pass") == BLIND)
    opened_for = set(projects.filter(pl.col("pass") == pass_name)["coder"])
    if opened_for and (pass_name != BLIND or set(coders) <= opened_for):
        raise RoundError(
            f"round {round_name!r} already has its {pass_name} pass (Label Studio projects "
            f"{sorted(projects.filter(pl.col('pass') == pass_name)['project_id'])}); start another round"
        )
    if pass_name != BLIND and blind.is_empty():
        raise RoundError(f"round {round_name!r} has no blind pass yet: `adri code start --round {round_name}` first")
    if pass_name == BLIND and len(set(coders)) < 2:
        raise RoundError("a blind pass needs two coders or more, each on their own (--coder EMAIL,EMAIL)")
    client = LabelStudio(settings.label_studio_url, settings.label_studio_token)
    if pass_name == BLIND:
        return _start_blind(context, client, round_name, coders, doc_ids, n, blind)
    pulled = pull(context, round_name)
    if pulled.uncoded_blind_tasks:
        raise RoundError(
            f"round {round_name!r}: {pulled.uncoded_blind_tasks} blind task(s) are not coded yet; the "
            f"{pass_name} pass shows answers the blind pass must not have seen, so it waits"
        )
    opened = OpenedPass(round_name, pass_name, 0)
    if pass_name == REVIEW:
        _start_review(settings, client, warehouse, codebook, opened, blind, coders)
    else:
        _start_adjudication(settings, client, warehouse, codebook, opened, pulled, coders)
    return opened


def _start_blind(context: RunContext, client, round_name, coders, doc_ids, n, blind) -> OpenedPass:
    """A project per coder. A round whose blind pass has projects already (a start cut short, or a
    coder added) gives the coders without one the same documents as the others."""
    if not blind.is_empty():
        doc_ids = list(blind["doc_ids"][0])
    documents = _round_documents(context, doc_ids, n)
    opened = OpenedPass(round_name, BLIND, len(documents))
    tasks = [{"data": task_data(d.doc_id, d.title, d.abstract)} for d in documents]
    for coder in dict.fromkeys(c for c in coders if c not in set(blind["coder"])):
        _open(client, context.warehouse, context.codebook, opened, coder, tasks, show_predictions=False)
    return opened


def _model_codes(warehouse: Warehouse, codebook: Codebook, model: str, documents: list[Document]) -> dict[str, dict]:
    """doc_id -> variable -> Code: the model's stored answers, each evidence located by the audit."""
    values = read_results(warehouse, model, codebook.content_hash)[0]
    by_doc = {d.doc_id: (d, DocumentIndex(d.abstract, d.title)) for d in documents}
    codes: dict[str, dict] = {}
    for doc_id, variable, value, evidence in values.select("doc_id", "variable", "value", "evidencia").iter_rows():
        if doc_id not in by_doc:
            continue
        document, index = by_doc[doc_id]
        audit = audit_evidence(evidence or "", index, no_information=True)
        spans = ()
        if audit.field and audit.start is not None:
            text = getattr(document, audit.field)[audit.start : audit.end]
            spans = (Span(audit.field, audit.start, audit.end, text),)
        codes.setdefault(doc_id, {})[variable] = Code(value, spans)
    return codes


def _start_review(settings, client, warehouse, codebook, opened, blind, coders) -> None:
    model = recorded_model(warehouse, settings.principal_model).model
    doc_ids = list(dict.fromkeys(d for ids in blind["doc_ids"] for d in ids))
    documents = coded_documents(settings, warehouse, doc_ids, settings.coders_corpus)
    answers = _model_codes(warehouse, codebook, model, documents)
    missing = [d.doc_id for d in documents if d.doc_id not in answers]
    if missing:
        raise RoundError(
            f"the principal model {model!r} has no answer for {len(missing)} document(s) of the "
            f"round: {missing[:5]}; classify them first"
        )
    tasks = [
        {
            "data": task_data(d.doc_id, d.title, d.abstract),
            "predictions": [{"model_version": model, "result": result_items(codebook, answers[d.doc_id])}],
        }
        for d in documents
    ]
    opened.documents = len(tasks)
    for coder in dict.fromkeys(coders or sorted(set(blind["coder"]))):
        _open(client, warehouse, codebook, opened, coder, tasks, show_predictions=True, model=model)


def _start_adjudication(settings, client, warehouse, codebook, opened, pulled, coders) -> None:
    disputed = pulled.disagreements
    if disputed.is_empty():
        log.warning("round %s: the blind coders agree everywhere; nothing to adjudicate", opened.round)
        return
    doc_ids = list(dict.fromkeys(disputed["doc_id"]))
    documents = coded_documents(settings, warehouse, doc_ids, settings.coders_corpus)
    blind = pulled.codes.filter(pl.col("pass") == BLIND)
    tasks = []
    for document in documents:
        mine = disputed.filter(pl.col("doc_id") == document.doc_id)
        text = "\n".join(
            f"{variable}: {'; '.join(values)}" for variable, values in mine.select("variable", "values").iter_rows()
        )
        agreed = {
            variable: Code(value)
            for variable, value in blind.filter(pl.col("doc_id") == document.doc_id)
            .group_by("variable")
            .agg(pl.col("value").unique())
            .filter(pl.col("value").list.len() == 1)
            .select("variable", pl.col("value").list.first())
            .iter_rows()
        }
        tasks.append(
            {
                "data": task_data(document.doc_id, document.title, document.abstract, disputes=text),
                "predictions": [{"model_version": "blind coders' agreement", "result": result_items(codebook, agreed)}],
            }
        )
    opened.documents = len(tasks)
    for coder in dict.fromkeys(coders or [ANY_CODER]):
        _open(client, warehouse, codebook, opened, coder, tasks, show_predictions=True, adjudication=True)


def _annotation_rows(codebook, project: dict, tasks: list[dict], users: dict[int, str]) -> tuple[list[dict], int]:
    """(a row per code of every annotation of the project, tasks nobody coded)."""
    rows, uncoded = [], 0
    for task in tasks:
        if not task.get("data", {}).get("doc_id"):
            log.warning(
                "round %s: task %s of project %s has no doc_id (not imported by adri code start): left out",
                project["round"],
                task.get("id"),
                project["project_id"],
            )
            continue
        annotations = [a for a in task.get("annotations", []) if not a.get("was_cancelled")]
        uncoded += not annotations
        for annotation in annotations:
            who = annotation.get("completed_by")
            who = who.get("email") if isinstance(who, dict) else users.get(who, str(who))
            if project["coder"] and who != project["coder"]:
                log.warning(
                    "round %s: %s coded in %s's %s project (task %s); recorded as theirs",
                    project["round"],
                    who,
                    project["coder"],
                    project["pass"],
                    task.get("id"),
                )
            for variable, code in codes_of(codebook, annotation.get("result", [])).items():
                first = code.spans[0] if code.spans else None
                rows.append(
                    {
                        "round": project["round"],
                        "pass": project["pass"],
                        "coder": who,
                        "doc_id": task["data"]["doc_id"],
                        "variable": variable,
                        "value": code.value,
                        "evidencia": code.evidencia,
                        "span_field": first and first.field,
                        "span_start": first and first.start,
                        "span_end": first and first.end,
                        "annotation_id": annotation.get("id"),
                        "project_id": project["project_id"],
                        "annotated_at": annotation.get("updated_at") or annotation.get("created_at"),
                    }
                )
    return rows, uncoded


def pull(context: RunContext, round_name: str, csv: Path | None = None) -> PulledRound:
    """Every annotation of the round's projects into the warehouse (replacing the round's earlier
    pull), each code's evidence audited, and the round's coders' CSV written (default:
    `<warehouse folder>/coding/<round>.csv`)."""
    settings, codebook, warehouse = context.settings, context.codebook, context.warehouse
    projects = coding_projects(warehouse, round_name)
    if projects.is_empty():
        raise RoundError(f"{warehouse.path}: no coding round {round_name!r}; `adri code start --round {round_name}`")
    client = LabelStudio(settings.label_studio_url, settings.label_studio_token)
    users = client.user_emails()
    rows, uncoded_blind = [], 0
    for project in projects.iter_rows(named=True):
        found, uncoded = _annotation_rows(codebook, project, client.annotated_tasks(project["project_id"]), users)
        rows += found
        uncoded_blind += uncoded if project["pass"] == BLIND else 0
    codes = pl.DataFrame(rows, schema=CODE_SCHEMA).with_columns(
        pl.col("annotated_at").str.to_datetime(time_zone="UTC", strict=False).dt.replace_time_zone(None)
    )
    # a coder who annotated a task twice (a project several people share): their latest annotation counts
    codes = codes.sort("annotated_at", nulls_last=False).unique(
        subset=["round", "pass", "coder", "doc_id", "variable"], keep="last", maintain_order=True
    )
    disputed = disagreements(codes)
    adjudicated = codes.filter(pl.col("pass") == ADJUDICATION).join(
        disputed.select("round", "doc_id", "variable"), on=["round", "doc_id", "variable"]
    )
    codes = pl.concat([codes.filter(pl.col("pass") != ADJUDICATION), adjudicated])
    doc_ids = list(dict.fromkeys(codes["doc_id"]))
    documents = {d.doc_id: d for d in coded_documents(settings, warehouse, doc_ids, settings.coders_corpus)}
    audits = audit_codes(codes, documents, codebook).select(
        "pass",
        "coder",
        "doc_id",
        "variable",
        "audit_status",
        pl.col("field").alias("audit_field"),
        "evidence_start",
        "evidence_end",
        pl.col("score").alias("audit_score"),
    )
    codes = codes.join(audits, on=["pass", "coder", "doc_id", "variable"], how="left")
    store_codes(warehouse, round_name, codes)
    stored = read_codes(warehouse, round_name)
    path = csv or warehouse.path.parent / "coding" / f"{file_name(round_name, 'round')}.csv"
    path.parent.mkdir(parents=True, exist_ok=True)
    with replacing(path) as written:
        stored.select(CODE_COLUMNS).write_csv(written)
    return PulledRound(round_name, path, stored, uncoded_blind, disputed)


def draw_random(
    context: RunContext,
    round_name: str,
    n: int,
    seed: int,
    stratify: str | None = None,
    drawn_ids: list[str] | None = None,
) -> pl.DataFrame:
    """The round's documents drawn at random from the classified corpus (the documents with the principal
    model's answers to this codebook), recorded in the warehouse before anything is coded, so corrected
    findings (classification/corrected.py) can tell them from documents `adri suggest` picked. Left out:
    the reserved documents, and those an earlier random round drew (every random round together stays
    one random sample). Drawing a round again with the same n, seed and strata gives its recorded draw.
    `drawn_ids`: a uniform draw made elsewhere (with `seed`), recorded as this round's: every id must be
    drawable, reserved ones and earlier rounds' never."""
    settings, codebook, warehouse = context.settings, context.codebook, context.warehouse.existing()
    earlier = coding_samples(warehouse)
    recorded = earlier.filter(pl.col("round") == round_name)
    asked = (len(drawn_ids) if drawn_ids is not None else n, seed, stratify or "")
    if not recorded.is_empty():
        return _the_recorded_draw(recorded, round_name, asked)
    refuse_superseding_coded_rounds(settings, warehouse, codebook, earlier, stratify)
    model, values, _ = answer_set(context, None)
    corpus = set(values["doc_id"]) - holdout_ids(settings)
    population = sorted(corpus - set(earlier["doc_id"]))
    if drawn_ids is not None:
        return _record_given_draw(warehouse, round_name, drawn_ids, seed, population, corpus, codebook, model)
    if n > len(population):
        raise RoundError(
            f"{warehouse.path}: {len(population)} classified document(s) can still be drawn "
            f"(reserved ones and earlier random rounds left out); ask for --random {len(population)} "
            "or fewer"
        )
    sample, left_out = _draw_by_strata(warehouse, round_name, population, n, seed, stratify)
    sample = sample.with_columns(
        pl.lit(round_name).alias("round"),
        pl.lit("random").alias("method"),
        pl.lit(seed, pl.Int64).alias("seed"),
        pl.lit(stratify or "").alias("stratified_by"),
        pl.lit(len(population), pl.Int64).alias("population"),
        pl.lit(codebook.content_hash).alias("codebook_hash"),
        pl.lit(model).alias("model"),
        pl.lit(population_hash(corpus)).alias("population_hash"),
        pl.lit(len(corpus), pl.Int64).alias("corpus_documents"),
        pl.lit(",".join(left_out)).alias("strata_left_out"),
    )
    store_coding_sample(warehouse, sample)
    return coding_samples(warehouse).filter(pl.col("round") == round_name)


def _the_recorded_draw(recorded: pl.DataFrame, round_name: str, asked: tuple[int, int, str]) -> pl.DataFrame:
    """A round drawn already: the same draw asked again gives the recorded one, so asking twice is safe;
    another size, seed or strata is refused, as a round has one draw (another draw is another round)."""
    drawn = (recorded.height, recorded["seed"][0], recorded["stratified_by"][0])
    if drawn != asked:
        raise RoundError(
            f"round {round_name!r} already drew {drawn[0]} documents with seed {drawn[1]}"
            f"{' by ' + drawn[2] if drawn[2] else ''}; start another round for another draw"
        )
    return recorded


def _draw_by_strata(
    warehouse: Warehouse, round_name: str, population: list[str], n: int, seed: int, stratify: str | None
) -> tuple[pl.DataFrame, list[str]]:
    """The seeded draw, by the strata of the document column `stratify` when given, and the strata that
    got no document: said now and recorded, since their documents cannot be corrected for."""
    strata = None
    if stratify:
        documents = read_documents(warehouse, population)
        strata = dict(zip(documents["doc_id"], documents[stratify].cast(pl.String).fill_null("unknown")))
    sample = draw(population, n, seed, strata)
    left_out = sorted(set((strata or {}).values()) - set(sample["stratum"]))
    if left_out:
        log.warning(
            "round %s: %d document(s) cannot reach every %s: %s get none (recorded; their documents "
            "cannot be corrected for)",
            round_name,
            n,
            stratify,
            ", ".join(left_out),
        )
    return sample, left_out


def _record_given_draw(warehouse, round_name, drawn_ids, seed, population, corpus, codebook, model) -> pl.DataFrame:
    """draw_random's record of a uniform draw made elsewhere (the project's shipped random round)."""
    outside = [d for d in drawn_ids if d not in set(population)]
    if outside:
        raise RoundError(
            f"{len(outside)} of the {len(drawn_ids)} ids cannot be drawn from the classified corpus "
            f"(not classified, reserved, or in an earlier random round): {outside[:5]}"
        )
    ids = sorted(set(drawn_ids))
    sample = pl.DataFrame({"doc_id": ids, "stratum": [""] * len(ids), "weight": [1.0] * len(ids)}).with_columns(
        pl.lit(round_name).alias("round"),
        pl.lit("random").alias("method"),
        pl.lit(seed, pl.Int64).alias("seed"),
        pl.lit("").alias("stratified_by"),
        pl.lit(len(population), pl.Int64).alias("population"),
        pl.lit(codebook.content_hash).alias("codebook_hash"),
        pl.lit(model).alias("model"),
        pl.lit(population_hash(corpus)).alias("population_hash"),
        pl.lit(len(corpus), pl.Int64).alias("corpus_documents"),
        pl.lit("").alias("strata_left_out"),
    )
    store_coding_sample(warehouse, sample)
    return coding_samples(warehouse).filter(pl.col("round") == round_name)


def pending(context: RunContext, round_name: str) -> pl.DataFrame:
    """coding.WITHOUT_GOLD_SCHEMA for the round's documents (drawn at random, or given to its blind
    pass): per variable, those without gold, disputed (to adjudicate) or not coded; gold from the
    coders' file when one is given (ADRI_CODERS), else from the round's pulled codes."""
    from adri_pipeline.classification.agreement import load_codes

    settings, codebook, warehouse = context.settings, context.codebook, context.warehouse.existing()
    drawn = coding_samples(warehouse).filter(pl.col("round") == round_name)["doc_id"].to_list()
    blind = coding_projects(warehouse, round_name).filter(pl.col("pass") == BLIND)
    doc_ids = drawn + [d for ids in blind["doc_ids"] for d in ids]
    if not doc_ids:
        raise RoundError(f"{warehouse.path}: round {round_name!r} has neither a random draw nor a blind pass")
    codes = load_codes(settings.coders, codebook) if settings.coders else read_codes(warehouse, round_name)
    gold, unresolved = gold_codes(codes)
    return without_gold(doc_ids, gold, unresolved, list(codebook.variables))


def read_ids(path: Path) -> list[str]:
    if not path.is_file():
        raise RoundError(f"{path}: ids file not found")
    return id_lines(path)


def refuse_superseding_coded_rounds(
    settings: Settings, warehouse: Warehouse, codebook: Codebook, earlier: pl.DataFrame, stratify: str | None
) -> None:
    """A random draw that would take coded random rounds out of the corrected findings is refused.

    Corrected findings pool every random round only when none is stratified; a stratified draw's
    weights hold for its own round, so with one among them the latest round corrects alone
    (corrected.estimation_sample). Drawing a stratified round after a coded uniform one (or any round
    after a coded stratified one) would silently drop that round's gold. ADR 0011 puts the
    validation sample first ("a amostra de validação vem primeiro") and the classification must serve
    "comparar o modelo com codificadores": the coded sample is the comparison, and the human work
    behind it is the costliest input there is, so the draw is refused, saying which rounds it would
    leave out, rather than kept beside them and overruling them. Uncoded earlier draws lose nothing."""
    if earlier.is_empty() or not (stratify or (earlier["stratified_by"] != "").any()):
        return
    coded = _coded_documents(settings, warehouse, codebook, earlier)
    if not coded:
        return
    rounds = ", ".join(f"{name} ({count} coded)" for name, count in coded.items())
    advice = (
        "draw it without --stratify: a uniform round adds to theirs, and together they stay one random sample"
        if stratify and not (earlier["stratified_by"] != "").any()
        else "a stratified round corrects alone, so no later random round can add to it in this warehouse"
    )
    raise RoundError(
        f"random round(s) {rounds} would no longer correct the findings: with a stratified draw "
        f"among the random rounds, only the latest corrects; {advice}"
    )


def _coded_documents(settings: Settings, warehouse: Warehouse, codebook: Codebook, samples: pl.DataFrame) -> dict:
    """Each random round of `samples` -> how many of its documents have a code, in the coders' file
    (--coders) or pulled into the warehouse (`adri code pull`); rounds with none left out."""
    from adri_pipeline.classification.agreement import load_codes

    in_file = set(load_codes(settings.coders, codebook)["doc_id"]) if settings.coders else set()
    counts = {}
    for name, doc_ids in samples.group_by("round", maintain_order=True).agg("doc_id").iter_rows():
        coded = len(set(doc_ids) & (in_file | set(read_codes(warehouse, name)["doc_id"])))
        if coded:
            counts[name] = coded
    return counts
