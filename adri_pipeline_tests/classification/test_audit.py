import pytest

from adri_pipeline.classification.audit import TextIndex, audit_evidence

ABSTRACT = (
    "Resumo  A pesquisa examina o “Escola sem Partido” — entre 2014 e 2019.\n"
    "Adota-se a ANÁLISE de discurso sobre as notas taquigráficas da Câmara."
)


def audit(quote, no_information=False, examples=""):
    return audit_evidence(quote, TextIndex(ABSTRACT), no_information, examples)


def span(result):
    return ABSTRACT[result.start : result.end]


@pytest.mark.parametrize(
    "quote, expected",
    [
        ('o "Escola sem Partido" - entre 2014', "o “Escola sem Partido” — entre 2014"),  # quotes, dashes
        ("a pesquisa   EXAMINA", "A pesquisa examina"),  # case, whitespace
        ("e 2019. adota-se a análise", "e 2019.\nAdota-se a ANÁLISE"),  # across a line break
        ("“a pesquisa examina”.", "A pesquisa examina"),  # surrounding quotes and final period
    ],
)
def test_literal_with_exact_offsets_into_the_original(quote, expected):
    result = audit(quote)
    assert result.status == "literal"
    assert span(result) == expected


def test_ellipsis_pieces_in_order_are_approximate_spanning_all_pieces():
    result = audit("A pesquisa examina … notas taquigráficas")
    assert result.status == "approximate"
    assert span(result).startswith("A pesquisa examina") and span(result).endswith("notas taquigráficas")


def test_ellipsis_pieces_out_of_order_are_not_accepted_as_pieces():
    result = audit("notas taquigráficas ... A pesquisa examina")
    assert result.reason != "ellipsis pieces in order"


def test_small_typo_is_approximate_with_offsets_of_the_matching_window():
    result = audit("adota-se a análise de discursos sobre as notas taquigraficas")
    assert result.status == "approximate" and result.score >= 90
    assert span(result).startswith("Adota-se a ANÁLISE de discurso")


def test_paraphrase_is_absent():
    result = audit("o estudo investiga projetos de lei conservadores")
    assert (result.status, result.start, result.end) == ("absent", None, None)


def test_quote_from_the_codebook_examples_is_named_as_such():
    result = audit(
        "Trata-se de pesquisa qualitativa, com entrevistas semiestruturadas",
        examples="Trata-se de pesquisa qualitativa, com entrevistas semiestruturadas",
    )
    assert result.status == "absent" and "codebook" in result.reason


def test_empty_evidence_is_waived_only_for_no_information():
    assert audit("", no_information=True).status == "waived"
    assert audit("  ", no_information=False).status == "absent"
