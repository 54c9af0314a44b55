"""Group `codebook`: the codebook file (observed by content hash) and the prompt signature."""


import dagster as dg

from adri_pipeline.classification.codebook import load_codebook
from adri_pipeline.classification.prompt import PROMPT_VERSION, build_prompt
from adri_pipeline.defs.metadata import file_hash
from adri_pipeline.defs.resources import DUCKDB_WRITER, AdriSettings
from adri_pipeline.warehouse import store_codebook


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
    leaves the classifications fresh while the results still get renamed."""
    book = load_codebook(adri.settings().codebook)
    prompt = build_prompt(book)
    store_codebook(adri.warehouse_access(), book, prompt)
    return dg.MaterializeResult(
        data_version=dg.DataVersion(prompt.signature),
        metadata={
            "signature": prompt.signature, "codebook_hash": book.content_hash,
            "codebook_version": book.version, "prompt_version": prompt.prompt_version,
            "variables": ", ".join(book.variables),
            "system_message": dg.MetadataValue.md(f"```\n{prompt.system_message}\n```"),
        },
    )
