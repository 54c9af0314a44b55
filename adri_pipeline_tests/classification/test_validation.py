"""What "valid" means (follows the codebook), and what is only an audit status or a flag."""

from adri_pipeline.classification.audit import DocumentIndex
from adri_pipeline.classification.prompt import build_prompt
from adri_pipeline.classification.validation import check_response
from loopback.fakes import answer

TEXT = "A pesquisa examina políticas alimentares no Brasil entre 2014 e 2019 com entrevistas semiestruturadas."


def check(content, pilot):
    return check_response(content, pilot, build_prompt(pilot), DocumentIndex(TEXT, "Um título"))


def test_a_good_answer_is_valid_first_try_with_literal_evidence(pilot):
    checked = check(answer(build_prompt(pilot).schema, TEXT), pilot)
    assert checked.valid and checked.json_valid and not checked.needs_retry
    assert {a.status for a in checked.audits.values()} == {"literal"}


def test_an_absent_quote_asks_for_a_retry_but_still_follows_the_codebook(pilot):
    checked = check(answer(build_prompt(pilot).schema, TEXT, {"recorte": {"evidencia": "frase que não existe"}}), pilot)
    assert checked.valid and checked.needs_retry and checked.absent == ["recorte"]
    assert "evidence absent" in checked.retry_reasons()["recorte"][0]


def test_a_value_off_the_codebook_is_invalid_but_the_json_had_the_right_shape(pilot):
    checked = check(answer(build_prompt(pilot).schema, TEXT, {"subarea": {"valor": "astronomia"}}), pilot)
    assert not checked.valid and checked.json_valid and list(checked.problems) == ["subarea"]


def test_a_missing_variable_is_neither_valid_nor_well_shaped(pilot):
    content = answer(build_prompt(pilot).schema, TEXT)
    del content["tecnica"]
    checked = check(content, pilot)
    assert not checked.valid and not checked.json_valid and checked.problems["tecnica"] == ["missing"]


def test_a_long_quote_is_a_flag_not_a_problem(pilot):
    long_quote = " ".join((TEXT + " " + TEXT).split()[:24])
    checked = check(answer(build_prompt(pilot).schema, TEXT, {"tecnica": {"evidencia": long_quote}}), pilot)
    assert checked.flags["tecnica"] == ["evidence has 24 words (max 20)"] and "tecnica" not in checked.problems


def test_the_worse_attempt_ranks_behind_any_that_follows_the_codebook(pilot):
    schema = build_prompt(pilot).schema
    absent_everywhere = {n: {"evidencia": "inventado", "valor": v["valor"]} for n, v in answer(schema, TEXT).items()}
    off_codebook = answer(schema, TEXT, {"subarea": {"valor": "astronomia"}})
    assert check(absent_everywhere, pilot).badness() < check(off_codebook, pilot).badness()
    assert check(off_codebook, pilot).badness() < check("não é JSON", pilot).badness()
