"""The `coder_agreement` asset and its check, on a coding round's CSV (the project's synthetic sample)."""

import dagster as dg
import polars as pl
import pytest

from adri_pipeline.classification.context import RunContext
from adri_pipeline.defs.classification.coders import coder_agreement, coder_file
from adri_pipeline.defs.resources import AdriSettings
from adri_pipeline.in_process import resources_for
from adri_pipeline.warehouse import Warehouse, read_table
from adri_pipeline_tests.classification.helpers import ROUND, round_file


def _materialized(instance, adri, path):
    settings = AdriSettings(**{**adri.model_dump(), "coders": str(path)})
    result = dg.materialize(
        [coder_file, coder_agreement],
        instance=instance,
        resources=resources_for(settings),
        selection=[coder_agreement.key],
    )
    return result, settings


def test_the_rounds_agreement_is_a_table_and_its_check_names_what_falls_short(dagster_instance, adri, tmp_path):
    result, settings = _materialized(dagster_instance, adri, round_file(tmp_path, ROUND))
    table = read_table(Warehouse(settings.warehouse), "coder_agreement")
    assert table.select("round", "variable", "n", "agreement_share").rows() == [("round-1", "abordagem", 4, 0.75)]
    [check] = result.get_asset_check_evaluations()
    assert check.passed and check.metadata["unresolved"].value == 0  # alpha 0.667, the one dispute adjudicated

    result, _ = _materialized(dagster_instance, adri, round_file(tmp_path, ROUND[:8]))  # not adjudicated yet
    [check] = result.get_asset_check_evaluations()
    assert not check.passed and "1 disagreement(s) not adjudicated: sample-004/abordagem" in check.description


@pytest.mark.slow  # end to end, over 7 s: the slow suite (.ci/run runs it)
def test_corrected_findings_are_a_table_and_their_check_warns_until_the_random_sample_is_enough(
    dagster_instance, adri, tmp_path
):
    """No random round: the check warns that the findings are the model's labels alone. A random round
    of 15 coded documents (synthetic codes): the table holds the corrected shares, and the check warns
    that 15 are too few to plan a ten-point width."""
    from adri_pipeline.classification.rounds import draw_random
    from adri_pipeline.classification.service import classify_corpus_file
    from adri_pipeline.defs.classification.coders import findings_corrected
    from adri_pipeline_tests.classification.helpers import model_codes, synthetic_codes

    codes = tmp_path / "codes.csv"
    settings = AdriSettings(**{**adri.model_dump(), "coders": str(codes)})
    classify_corpus_file(adri.settings())  # zero-shot: the coders' file comes after
    synthetic_codes(codes, model_codes(settings.settings(), ["sample-003"]), "picked")

    def materialized():
        result = dg.materialize(
            [coder_file, coder_agreement, findings_corrected],
            instance=dagster_instance,
            resources=resources_for(settings),
            selection=[findings_corrected.key],
        )
        [check] = result.get_asset_check_evaluations()
        return check

    check = materialized()
    assert not check.passed and "no random coded sample" in check.description

    drawn = draw_random(RunContext.load(settings.settings()), "random-1", 15, seed=3)
    synthetic_codes(codes, model_codes(settings.settings(), list(drawn["doc_id"])), "random-1")
    check = materialized()
    stored = read_table(Warehouse(settings.warehouse), "findings_corrected")
    table = stored.filter(pl.col("grouped_by") == "")
    assert set(table["variable"]) >= {"abordagem", "tecnica"} and (table["coded"] == 15).all()
    by_year = stored.filter((pl.col("grouped_by") == "year") & (pl.col("variable") == "abordagem"))
    per_value = by_year.group_by("value").agg(pl.col("coded").sum(), pl.col("group_name").n_unique())
    assert (per_value["coded"] == 15).all() and (per_value["group_name"] > 1).all()  # each year's own coded
    assert (table["corpus_low"] <= table["corpus_share"]).all() and (
        table["corpus_share"] <= table["corpus_high"]
    ).all()
    assert not check.passed and "15 random document(s) coded" in check.description
    assert check.metadata["coded"].value == 15


def test_a_codebook_edit_prompt_signature_has_not_recorded_never_reaches_the_coder_agreement(
    dagster_instance, adri, codebook_copy, tmp_path
):
    """Failed before: coder_agreement read the codebook file as it was now, so a value renamed on disk
    (and not yet recorded by prompt_signature) made the round's codes unknown values and the asset
    failed; it reads the codes against the codebook prompt_signature recorded, as the assets before it."""
    from adri_pipeline.defs.classification.codebook import prompt_signature

    settings = AdriSettings(**{**adri.model_dump(), "coders": str(round_file(tmp_path, ROUND))})
    dg.materialize([prompt_signature], instance=dagster_instance, resources=resources_for(settings))
    text = codebook_copy.read_text(encoding="utf-8")
    assert text.count("mista:") == 2  # the value and its label
    codebook_copy.write_text(text.replace("mista:", "misto:"), encoding="utf-8")

    result = dg.materialize(
        [coder_file, coder_agreement],
        instance=dagster_instance,
        resources=resources_for(settings),
        selection=[coder_agreement.key],
    )
    table = read_table(Warehouse(settings.warehouse), "coder_agreement")
    assert table.select("round", "variable", "n", "agreement_share").rows() == [("round-1", "abordagem", 4, 0.75)]
    [check] = result.get_asset_check_evaluations()
    assert check.passed  # the adjudicated "mista" is gold under the recorded codebook


@pytest.mark.slow  # the sample classified end to end: the slow suite (.ci/run runs it)
def test_findings_corrected_keeps_the_labels_prompt_signature_recorded_while_the_file_is_edited(
    dagster_instance, adri, codebook_copy, tmp_path
):
    """Failed before: findings_corrected read the codebook file as it was now, so a label renamed on disk
    (a new codebook hash, not yet recorded by prompt_signature) found no results of its codebook and
    the asset failed; it computes on the codebook prompt_signature recorded, labels included."""
    from adri_pipeline.classification.rounds import draw_random
    from adri_pipeline.classification.service import classify_corpus_file
    from adri_pipeline.defs.classification.codebook import prompt_signature
    from adri_pipeline.defs.classification.coders import findings_corrected
    from adri_pipeline_tests.classification.helpers import model_codes, synthetic_codes

    codes = tmp_path / "codes.csv"
    settings = AdriSettings(**{**adri.model_dump(), "coders": str(codes)})
    classify_corpus_file(adri.settings())
    drawn = draw_random(RunContext.load(settings.settings()), "random-1", 15, seed=3)
    synthetic_codes(codes, model_codes(settings.settings(), list(drawn["doc_id"])), "random-1")
    dg.materialize([prompt_signature], instance=dagster_instance, resources=resources_for(settings))
    text = codebook_copy.read_text(encoding="utf-8")
    assert text.count("mista: Métodos mistos") == 1
    codebook_copy.write_text(text.replace("mista: Métodos mistos", "mista: Mixed methods"), encoding="utf-8")

    dg.materialize(
        [coder_file, coder_agreement, findings_corrected],
        instance=dagster_instance,
        resources=resources_for(settings),
        selection=[findings_corrected.key],
    )
    stored = read_table(Warehouse(settings.warehouse), "findings_corrected")
    labels = dict(stored.filter(pl.col("variable") == "abordagem").select("value", "label").unique().iter_rows())
    assert labels["mista"] == "Métodos mistos"
