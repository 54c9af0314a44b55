"""The `coder_agreement` asset and its check, on a coding round's CSV (the project's synthetic sample)."""

import dagster as dg

from adri_pipeline.defs.classification.coders import coder_agreement, coder_file
from adri_pipeline.defs.resources import AdriSettings
from adri_pipeline.in_process import resources_for
from adri_pipeline.warehouse import Warehouse, read_table
from adri_pipeline_tests.classification.test_coding import ROUND, round_file


def _materialized(instance, adri, path):
    settings = AdriSettings(**{**adri.model_dump(), "coders": str(path)})
    result = dg.materialize([coder_file, coder_agreement], instance=instance,
                            resources=resources_for(settings), selection=[coder_agreement.key])
    return result, settings


def test_the_rounds_agreement_is_a_table_and_its_check_names_what_falls_short(dagster_instance, adri, tmp_path):
    result, settings = _materialized(dagster_instance, adri, round_file(tmp_path, ROUND))
    table = read_table(Warehouse(settings.warehouse), "coder_agreement")
    assert table.select("round", "variable", "n", "agreement_pct").rows() == [("round-1", "abordagem", 4, 75.0)]
    [check] = result.get_asset_check_evaluations()
    assert check.passed and check.metadata["unresolved"].value == 0  # alpha 0.667, the one dispute adjudicated

    result, _ = _materialized(dagster_instance, adri, round_file(tmp_path, ROUND[:8]))  # not adjudicated yet
    [check] = result.get_asset_check_evaluations()
    assert not check.passed and "1 disagreement(s) not adjudicated: sample-004/abordagem" in check.description
