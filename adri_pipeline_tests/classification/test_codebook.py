import pytest

from adri_pipeline.classification.codebook import CodebookError, load_codebook, parse_codebook

VALID = """
name: t
version: "1"
instructions: Classifique o resumo com cuidado.
variables:
  abordagem:
    type: enum
    definition: Abordagem do estudo.
    values:
      qualitativa: {description: Pesquisa qualitativa.}
      nao_informado: {description: Sem informação.}
    labels: {qualitativa: Qualitativa}
"""


def test_pilot_codebook_has_six_typed_variables(pilot):
    assert list(pilot.variables) == ["abordagem", "tecnica", "recorte", "brasil_caso", "subarea", "periodo"]
    assert {v.type for v in pilot.variables.values()} == {"enum", "list", "boolean", "text"}
    assert pilot.variables["brasil_caso"].label(True) == "Sim"
    assert len(pilot.content_hash) == 64


def test_minimal_codebook_parses():
    codebook = parse_codebook(VALID, "x.yaml")
    assert codebook.variables["abordagem"].allowed_values() == ["qualitativa", "nao_informado"]


@pytest.mark.parametrize(
    "broken, expected",
    [
        (
            VALID.replace(
                "      nao_informado: {description: Sem informação.}", "      qualitativa: {description: De novo.}"
            ),
            "line 11: duplicate key 'qualitativa' (first at line 10)",
        ),
        (VALID.replace("type: enum", "type: escala"), "variable 'abordagem', field 'type'"),
        (
            VALID.replace(
                """      qualitativa: {description: Pesquisa qualitativa.}
      nao_informado: {description: Sem informação.}
""",
                "      {}\n",
            ),
            "variable 'abordagem', field 'values'",
        ),
        (
            VALID.replace("labels: {qualitativa: Qualitativa}", "labels: {quantitativa: Quantitativa}"),
            "label for unknown value(s) ['quantitativa']",
        ),
        (VALID.replace("      nao_informado: {description: Sem informação.}\n", ""), "must offer 'nao_informado'"),
        (
            VALID.replace("    definition: Abordagem do estudo.\n", ""),
            "variable 'abordagem', field 'definition': Field required",
        ),
        (VALID.replace("  abordagem:", "  Abordagem Geral:"), "not a lowercase identifier"),
        (VALID.replace("    type: enum", "    type: enum\n    weight: 3"), "field 'weight': Extra inputs"),
        (VALID.replace("type: enum", "type: boolean"), "a boolean variable may only describe"),
        ("name: [unclosed", "not valid YAML"),
    ],
)
def test_bad_codebooks_name_file_variable_and_field(broken, expected):
    with pytest.raises(CodebookError) as error:
        parse_codebook(broken, "codebooks/bad.yaml")
    assert "codebooks/bad.yaml" in str(error.value)
    assert expected in str(error.value)


def test_missing_codebook_file_is_named(tmp_path):
    with pytest.raises(CodebookError, match="missing.yaml: codebook file not found"):
        load_codebook(tmp_path / "missing.yaml")
