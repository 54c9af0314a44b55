"""Group `coders`: the coders' file (observed by content hash) and the embedded model trained on it."""

import dagster as dg

from adri_pipeline.classification.coded_model import TRAINING_VERSION
from adri_pipeline.classification.coders import agreement, coded_sample, model_path, train
from adri_pipeline.defs.classification.codebook import prompt_signature
from adri_pipeline.defs.classification.corpus import corpus
from adri_pipeline.defs.metadata import file_hash, table_metadata
from adri_pipeline.defs.resources import DUCKDB_WRITER, AdriSettings


def coder_file_version(settings) -> str:
    """The coders' file's data version: the hash of the file, "none" when not configured."""
    return file_hash(settings.coders) if settings.coders else "none"


@dg.observable_source_asset(group_name="coders")
def coder_file(adri: AdriSettings) -> dg.DataVersion:
    """The coders' CSV (ADRI_CODERS), observed by new_codes_sensor each time it looks (no run
    needed) or from the UI; its version is coder_file_version."""
    return dg.DataVersion(coder_file_version(adri.settings()))


@dg.asset(code_version=TRAINING_VERSION, pool=DUCKDB_WRITER, group_name="coders", deps=[coder_file, prompt_signature, corpus], kinds={"duckdb"})
def coded_model(context: dg.AssetExecutionContext, adri: AdriSettings) -> dg.MaterializeResult:
    """The embedded model fitted on the coders' codes, stored beside the warehouse where classification
    loads it (no second fit). Its data version is the fit's digest (coder file, coded texts, codebook,
    settings), the same digest that is in the model name and every cache key of its answers: new codes
    reclassify with the new model (reclassify_after_refit_sensor), and nothing else. The metadata holds
    the cross-validated agreement next to the zero-shot model's on the same documents."""
    settings = adri.settings()
    if settings.coders is None:
        return dg.MaterializeResult(data_version=dg.DataVersion("zero-shot"),
                                    metadata={"coders": "none configured (ADRI_CODERS): the embedded model stays zero-shot"})
    sample = coded_sample(settings)  # read once: the fit and its cross-validation share it
    model = train(settings, sample=sample)
    measured = agreement(settings, cross_validated=True, sample=sample)
    context.log.info(f"coded model {model.digest[:12]} fitted on {len(model.documents)} documents")
    return dg.MaterializeResult(
        data_version=dg.DataVersion(model.digest),
        metadata={
            "digest": model.digest, "path": dg.MetadataValue.path(str(model_path(settings, model.digest))),
            "coders": str(settings.coders), "documents": len(model.documents),
            "never_predicted": str({k: v for k, v in model.never_predicted.items() if v}),
            "agreement": table_metadata(measured.table),
        },
    )
