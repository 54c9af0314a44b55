"""The coders' labeling interface generated from the codebook (Label Studio's config language)."""

import xml.etree.ElementTree as ET

import pytest

from adri_pipeline.classification.codebook import load_codebook
from adri_pipeline.classification.labeling import labeling_config
from adri_pipeline.config import PILOT_CODEBOOK


def test_every_variable_is_a_control_of_its_type_with_its_values_and_hints():
    codebook = load_codebook(PILOT_CODEBOOK)
    view = ET.fromstring(labeling_config(codebook))
    controls = {element.get("name"): element for element in view if element.get("name")}
    for name, variable in codebook.variables.items():
        control = controls[name]
        if variable.type == "text":
            assert control.tag == "TextArea" and variable.definition in control.get("placeholder")
            continue
        assert control.tag == "Choices" and control.get("toName") == "abstract"
        assert control.get("choice") == ("multiple" if variable.type == "list" else "single-radio")
        offered = [choice.get("value") for choice in control]
        assert offered == variable.allowed_values()
        for choice in control:
            spec = variable.values.get(choice.get("value"))
            if spec is not None:
                assert spec.description in choice.get("hint")
    for field in ("title", "abstract"):  # the evidence is a span on either field, one label per variable
        labels = controls[f"evidencia_{field}"]
        assert labels.tag == "Labels" and labels.get("toName") == field
        assert [label.get("value") for label in labels] == list(codebook.variables)
        assert controls[field].tag == "Text" and controls[field].get("value") == f"${field}"


@pytest.mark.slow
def test_label_studio_takes_the_interface_and_shows_a_document_with_every_variable(tmp_path):
    """A real Label Studio on loopback: a project made with the generated interface, one document
    loaded, its labeling page opened in headless Chromium with no script error, every variable's
    question and the evidence labels on the page (the screenshot is kept beside the test's files)."""
    import httpx

    from adri_pipeline_tests.label_studio_server import label_studio, labeling_page

    codebook = load_codebook(PILOT_CODEBOOK)
    with label_studio() as server:
        api = httpx.Client(base_url=server.url, headers={"Authorization": f"Token {server.token}"}, timeout=30)
        made = api.post("/api/projects", json={"title": "pilot, round 1", "label_config": labeling_config(codebook)})
        assert made.status_code == 201, made.text
        project = made.json()["id"]
        loaded = api.post(
            f"/api/projects/{project}/import",
            json=[{"title": "O direito à alimentação", "abstract": "Um estudo qualitativo em 2010."}],
        )
        assert loaded.status_code == 201, loaded.text
        text, errors = labeling_page(
            server, project, f"periodo: {codebook.variables['periodo'].definition}", tmp_path / "labeling.png"
        )
    assert not errors, errors
    for name, variable in codebook.variables.items():
        assert f"{name}: {variable.definition}" in text
    assert "Um estudo qualitativo em 2010." in text and (tmp_path / "labeling.png").stat().st_size > 20_000
