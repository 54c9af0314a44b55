"""The assets after `prompt_signature` read the codebook it recorded, not the file as it is now."""

import dagster as dg
import pytest

from adri_pipeline.in_process import materialize_graph, resources_for


@pytest.mark.slow  # the sample classified and its results built: the slow suite (.ci/run runs it)
def test_the_results_are_built_with_the_codebook_prompt_signature_recorded(
    dagster_instance, adri, codebook_copy, capfd
):
    """Failed before: the assets declared the codebook as a dependency and re-read the YAML, so an edit
    that no prompt_signature had recorded yet was what they computed with."""
    from adri_pipeline.defs.classification.assets import classification_results
    from adri_pipeline.defs.classification.codebook import prompt_signature

    materialize_graph(dagster_instance, adri, jobs=("classify", "results"))
    recorded = dagster_instance.get_latest_materialization_event(prompt_signature.key)
    recorded_hash = recorded.asset_materialization.metadata["codebook_hash"].value
    text = codebook_copy.read_text(encoding="utf-8")
    codebook_copy.write_text(text.replace("definition:", "definition: Revised.", 1), encoding="utf-8")

    result = dg.materialize([classification_results], instance=dagster_instance, resources=resources_for(adri))
    [built] = result.asset_materializations_for_node("classification_results")
    assert built.metadata["codebook_hash"].value == recorded_hash
    assert "changed since prompt_signature recorded it" in capfd.readouterr().err
