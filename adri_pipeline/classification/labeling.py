"""The coders' labeling interface, generated from the codebook (issue 33's coding round in Label
Studio): per variable its values — one choice for enum and boolean, several for list, a text area for
text — with the definition and each value's description and examples as hints, and a span label per
variable for the evidence (`evidencia`) on the title and on the abstract. The XML is Label Studio's
labeling-config language; the codebook's terms stay as users wrote them."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from adri_pipeline.classification.codebook import Codebook, Variable

TITLE, ABSTRACT = "title", "abstract"  # the task fields a document is loaded with
EVIDENCE_PREFIX = "evidencia_"  # the span-label control on each field: evidencia_title, evidencia_abstract


def _hint(variable: Variable, value: str | None = None) -> str:
    if value is None:
        examples = "; ".join(variable.examples)
        return variable.definition + (f" Exemplos: {examples}" if examples else "")
    spec = variable.values.get(value)
    if spec is None:
        return ""
    examples = "; ".join(spec.examples)
    return spec.description + (f" Exemplos: {examples}" if examples else "")


def _variable_control(view: ET.Element, name: str, variable: Variable) -> None:
    ET.SubElement(view, "Header", value=f"{name}: {variable.definition}", size="5")
    if variable.type == "text":
        ET.SubElement(view, "TextArea", name=name, toName=ABSTRACT, rows="2", maxSubmissions="1", editable="true",
                      placeholder=_hint(variable))
        return
    choices = ET.SubElement(view, "Choices", name=name, toName=ABSTRACT, showInline="true", required="true",
                            choice="multiple" if variable.type == "list" else "single-radio", hint=_hint(variable))
    for value in variable.allowed_values():
        ET.SubElement(choices, "Choice", value=value, hint=_hint(variable, value) or variable.label(value))


def labeling_config(codebook: Codebook) -> str:
    """The `<View>` a coder answers one document in."""
    view = ET.Element("View")
    ET.SubElement(view, "Header", value=f"{codebook.name} v{codebook.version}: {codebook.instructions.strip()}",
                  size="6")
    for field in (TITLE, ABSTRACT):
        labels = ET.SubElement(view, "Labels", name=f"{EVIDENCE_PREFIX}{field}", toName=field)
        for name in codebook.variables:
            ET.SubElement(labels, "Label", value=name, hint=f"evidencia de {name}")
        ET.SubElement(view, "Text", name=field, value=f"${field}", granularity="word")
    for name, variable in codebook.variables.items():
        _variable_control(view, name, variable)
    ET.indent(view)
    return ET.tostring(view, encoding="unicode")
