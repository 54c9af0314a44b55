"""Results follow classification runs by their automation condition, not by sensors chaining jobs."""

import dagster as dg
import pytest

from adri_pipeline.definitions import defs
from adri_pipeline.defs.classification.jobs import RESULTS_ONWARD
from adri_pipeline.in_process import materialize_graph

FOLLOWERS = [a.key for a in RESULTS_ONWARD]


def requested(result) -> dict[str, int]:
    return {key.to_user_string(): result.get_num_requested(key) for key in FOLLOWERS}


@pytest.mark.slow  # end to end, over 7 s: the slow suite (.ci/run runs it)
def test_results_are_rebuilt_once_after_a_range_run_and_not_again(dagster_instance, adri):
    """Failed before: two run-status sensors chained classify_documents_job to refresh_results_job."""
    first = dg.evaluate_automation_conditions(defs=defs, instance=dagster_instance)
    materialize_graph(dagster_instance, adri, jobs=("classify",))  # one range run, the results not yet rebuilt
    after_run = dg.evaluate_automation_conditions(defs=defs, instance=dagster_instance, cursor=first.cursor)
    assert requested(after_run) == {key.to_user_string(): 1 for key in FOLLOWERS}
    assert {
        k.to_user_string()
        for k in dg.AssetSelection.all().resolve(defs.resolve_asset_graph())
        if after_run.get_num_requested(k)
    } == {k.to_user_string() for k in FOLLOWERS}  # nothing else
    again = dg.evaluate_automation_conditions(defs=defs, instance=dagster_instance, cursor=after_run.cursor)
    assert again.total_requested == 0  # requested once: not again until the next upstream update


@pytest.mark.slow  # end to end, over 7 s: the slow suite (.ci/run runs it)
def test_an_upstream_rebuilt_with_the_same_content_leaves_the_results_alone(dagster_instance, adri, codebook_copy):
    """Failed before: eager() followed any materialization, so a prompt signature rebuilt from an
    unchanged codebook rebuilt every result and audit after it."""
    from adri_pipeline.defs.classification.codebook import prompt_signature
    from adri_pipeline.in_process import resources_for

    materialize_graph(dagster_instance, adri, jobs=("classify", "results"))
    settled = dg.evaluate_automation_conditions(defs=defs, instance=dagster_instance)
    settled = dg.evaluate_automation_conditions(defs=defs, instance=dagster_instance, cursor=settled.cursor)
    dg.materialize([prompt_signature], instance=dagster_instance, resources=resources_for(adri))  # same signature
    unchanged = dg.evaluate_automation_conditions(defs=defs, instance=dagster_instance, cursor=settled.cursor)
    assert unchanged.get_num_requested(dg.AssetKey("classification_results")) == 0

    text = codebook_copy.read_text(encoding="utf-8")
    codebook_copy.write_text(text.replace("definition:", "definition: Revised.", 1), encoding="utf-8")
    dg.materialize([prompt_signature], instance=dagster_instance, resources=resources_for(adri))  # a new signature
    changed = dg.evaluate_automation_conditions(defs=defs, instance=dagster_instance, cursor=unchanged.cursor)
    assert changed.get_num_requested(dg.AssetKey("classification_results")) == 1
