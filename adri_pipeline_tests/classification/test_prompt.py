import jsonschema
import pytest

from adri_pipeline.classification.codebook import load_codebook
from adri_pipeline.classification.prompt import build_prompt, build_retry_message


def _edited(codebook_copy, old, new):
    text = codebook_copy.read_text(encoding="utf-8")
    assert old in text
    codebook_copy.write_text(text.replace(old, new, 1), encoding="utf-8")
    return load_codebook(codebook_copy)


def test_schema_puts_evidence_first_and_types_values(pilot):
    schema = build_prompt(pilot).schema
    abordagem = schema["properties"]["abordagem"]
    assert list(abordagem["properties"]) == ["evidencia", "valor"]
    assert abordagem["properties"]["evidencia"]["maxLength"] == 200
    assert "nao_informado" in abordagem["properties"]["valor"]["enum"]
    assert schema["properties"]["tecnica"]["properties"]["valor"]["uniqueItems"] is True
    assert schema["properties"]["brasil_caso"]["properties"]["valor"] == {"type": "boolean"}
    jsonschema.Draft202012Validator.check_schema(schema)


def test_system_message_holds_definitions_not_labels(pilot):
    system = build_prompt(pilot).system_message
    assert pilot.variables["abordagem"].definition in system
    assert "Teórica / ensaio" not in system  # a display label
    assert pilot.version not in system


@pytest.mark.parametrize(
    "old, new",
    [
        ("teorica: Teórica / ensaio", "teorica: Ensaio teórico"),
        ('version: "2026.11.0"', 'version: "2026.12.0"'),
    ],
)
def test_label_or_version_edit_keeps_signature_but_changes_codebook_hash(pilot, codebook_copy, old, new):
    edited = _edited(codebook_copy, old, new)
    assert build_prompt(edited).signature == build_prompt(pilot).signature
    assert edited.content_hash != pilot.content_hash


def test_definition_edit_changes_signature(pilot, codebook_copy):
    edited = _edited(codebook_copy, "Recorte geográfico do objeto estudado.", "Escala geográfica do objeto.")
    assert build_prompt(edited).signature != build_prompt(pilot).signature


def test_retry_message_names_each_failing_variable():
    message = build_retry_message({"tecnica": ["evidence absent"], "recorte": ["'mundo' is not one of"]})
    assert "- tecnica: evidence absent" in message
    assert "- recorte: 'mundo' is not one of" in message
