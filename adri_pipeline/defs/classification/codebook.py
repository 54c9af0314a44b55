"""Group `codebook`: the codebook file (observed by content hash) and the prompt signature."""

from pathlib import Path

import dagster as dg

from adri_pipeline.classification.codebook import Codebook, load_codebook, parse_codebook
from adri_pipeline.classification.prompt import PROMPT_VERSION, build_prompt
from adri_pipeline.defs.metadata import file_hash, warehouse_table
from adri_pipeline.defs.resources import DUCKDB_WRITER, AdriSettings
from adri_pipeline.warehouse import store_codebook, stored_codebook
from adri_pipeline.warehouse.catalog import table_description


def codebook_version(settings) -> str:
    """The codebook's data version: the hash of the whole file (labels included)."""
    return file_hash(settings.codebook)


@dg.observable_source_asset(group_name="codebook")
def codebook(adri: AdriSettings) -> dg.DataVersion:
    """The codebook YAML, observed by codebook_change_sensor each time it looks (no run needed) or
    from the UI; its version is codebook_version."""
    return dg.DataVersion(codebook_version(adri.settings()))


@dg.asset(code_version=PROMPT_VERSION, pool=DUCKDB_WRITER, group_name="codebook", deps=[codebook], kinds={"duckdb"})
def prompt_signature(adri: AdriSettings) -> dg.MaterializeResult:
    """System message + response schema. Its data version is the signature, so a label-only edit
    leaves the classifications fresh while the results still get renamed. Its table metadata
    describes `prompt_signatures`."""
    book = load_codebook(adri.settings().codebook)
    prompt = build_prompt(book)
    warehouse = adri.warehouse_access()
    store_codebook(warehouse, book, prompt)
    return dg.MaterializeResult(
        data_version=dg.DataVersion(prompt.signature),
        metadata={
            "signature": prompt.signature,
            "codebook_hash": book.content_hash,
            "codebook_version": book.version,
            "prompt_version": prompt.prompt_version,
            "variables": ", ".join(book.variables),
            "system_message": dg.MetadataValue.md(f"```\n{prompt.system_message}\n```"),
            **warehouse_table(table_description(warehouse, "prompt_signatures")),
        },
    )


def recorded_codebook(context, adri: AdriSettings) -> Codebook:
    """The codebook `prompt_signature` last stored (its materialization's codebook_hash, the text it
    stored in the warehouse): the assets after it compute on what their upstream recorded, not on the
    file as it is now (an edit since is a new observation, and the sensor's next run). Before
    prompt_signature was ever materialized in this instance, the settings' file, and a log line says so."""
    event = context.instance.get_latest_materialization_event(prompt_signature.key)
    recorded = (
        event.asset_materialization.metadata.get("codebook_hash") if event and event.asset_materialization else None
    )
    stored = stored_codebook(adri.warehouse_access(), recorded.value) if recorded is not None else None
    if stored is None:
        path = adri.settings().codebook
        context.log.info(f"prompt_signature has no stored codebook in this warehouse yet: {path} read as it is now")
        return load_codebook(path)
    book = parse_codebook(stored["content"], source=stored["path"])
    try:
        unchanged = Path(adri.settings().codebook).read_text(encoding="utf-8") == stored["content"]
    except (OSError, UnicodeDecodeError):
        unchanged = False
    if not unchanged:
        context.log.warning(
            f"{adri.settings().codebook} changed since prompt_signature recorded it: this run uses "
            "the recorded codebook; materialize prompt_signature to use the edit"
        )
    return book
