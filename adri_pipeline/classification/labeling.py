"""The coders' labeling interface in Label Studio, generated from the codebook: per variable its values — one
choice for enum and boolean, several for list, a text area for text — with the definition and each value's
description and examples as hints, and a span label per variable for the evidence (`evidencia`) on the title
and on the abstract. The XML is Label Studio's labeling-config language; the codebook's terms stay as users
wrote them.

Also the two translations between a document's codes and Label Studio's result items (its JSON
format for annotations and predictions): `result_items` writes the principal model's answers as a
pre-annotation, `codes_of` reads a coder's annotation back as (value, evidence) per variable."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import dataclass

from adri_pipeline.classification.codebook import Codebook, Variable

TITLE, ABSTRACT = "title", "abstract"  # the task fields a document is loaded with
DISPUTES = "disputes"  # the adjudication pass's field: what each blind coder answered
EVIDENCE_PREFIX = "evidencia_"  # the span-label control on each field: evidencia_title, evidencia_abstract
ELLIPSIS = " … "  # between a code's evidence spans, which the audit reads as pieces in order


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
        ET.SubElement(
            view,
            "TextArea",
            name=name,
            toName=ABSTRACT,
            rows="2",
            maxSubmissions="1",
            editable="true",
            placeholder=_hint(variable),
        )
        return
    choices = ET.SubElement(
        view,
        "Choices",
        name=name,
        toName=ABSTRACT,
        showInline="true",
        required="true",
        choice="multiple" if variable.type == "list" else "single-radio",
        hint=_hint(variable),
    )
    for value in variable.allowed_values():
        ET.SubElement(choices, "Choice", value=value, hint=_hint(variable, value) or variable.label(value))


def labeling_config(codebook: Codebook, adjudication: bool = False) -> str:
    """The `<View>` a coder answers one document in; for adjudication, with the blind coders'
    answers above the text."""
    view = ET.Element("View")
    ET.SubElement(
        view, "Header", value=f"{codebook.name} v{codebook.version}: {codebook.instructions.strip()}", size="6"
    )
    if adjudication:
        ET.SubElement(view, "Header", value="Os codificadores discordaram em:", size="5")
        ET.SubElement(view, "Text", name=DISPUTES, value=f"${DISPUTES}")
    for field in (TITLE, ABSTRACT):
        labels = ET.SubElement(view, "Labels", name=f"{EVIDENCE_PREFIX}{field}", toName=field)
        for name in codebook.variables:
            ET.SubElement(labels, "Label", value=name, hint=f"evidencia de {name}")
        ET.SubElement(view, "Text", name=field, value=f"${field}", granularity="word")
    for name, variable in codebook.variables.items():
        _variable_control(view, name, variable)
    ET.indent(view)
    return ET.tostring(view, encoding="unicode")


def task_data(doc_id: str, title: str, abstract: str, disputes: str | None = None) -> dict:
    """One document as a Label Studio task's data (doc_id travels with it, not shown)."""
    data = {"doc_id": doc_id, TITLE: title or "", ABSTRACT: abstract or ""}
    return data if disputes is None else data | {DISPUTES: disputes}


@dataclass(frozen=True)
class Span:
    field: str  # "title" | "abstract"
    start: int
    end: int
    text: str


@dataclass(frozen=True)
class Code:
    """One variable's code as Label Studio holds it."""

    value: str  # canonical spelling: list values sorted and joined with '|'
    spans: tuple[Span, ...] = ()

    @property
    def evidencia(self) -> str:
        return ELLIPSIS.join(span.text for span in self.spans)


def result_items(codebook: Codebook, codes: dict[str, Code]) -> list[dict]:
    """Label Studio result items for these codes: a choice (or text) per variable and a span label per
    evidence span. A value the codebook does not offer is left out: Label Studio would refuse it."""
    items = []
    for name, code in codes.items():
        variable = codebook.variables.get(name)
        if variable is None:
            continue
        if variable.type == "text":
            items.append({"from_name": name, "to_name": ABSTRACT, "type": "textarea", "value": {"text": [code.value]}})
        else:
            chosen = [v for v in code.value.split("|") if v in variable.allowed_values()]
            if not chosen:
                continue
            items.append({"from_name": name, "to_name": ABSTRACT, "type": "choices", "value": {"choices": chosen}})
        for span in code.spans:
            items.append(
                {
                    "from_name": f"{EVIDENCE_PREFIX}{span.field}",
                    "to_name": span.field,
                    "type": "labels",
                    "value": {"start": span.start, "end": span.end, "text": span.text, "labels": [name]},
                }
            )
    return items


def codes_of(codebook: Codebook, result: list[dict]) -> dict[str, Code]:
    """A coder's annotation read back: per variable answered, its canonical value and its evidence
    spans in the order of the text (title first). A span whose variable has no answer is kept out."""
    values: dict[str, str] = {}
    spans: dict[str, list[Span]] = {}
    for item in result:
        name, kind, value = item.get("from_name", ""), item.get("type"), item.get("value", {})
        if kind == "choices" and name in codebook.variables:
            values[name] = "|".join(sorted(str(v).lower() for v in value.get("choices", [])))
        elif kind == "textarea" and name in codebook.variables:
            values[name] = " ".join(t.strip() for t in value.get("text", []) if t.strip())
        elif kind == "labels" and name.startswith(EVIDENCE_PREFIX):
            field = name.removeprefix(EVIDENCE_PREFIX)
            for label in value.get("labels", []):
                spans.setdefault(label, []).append(
                    Span(field, int(value["start"]), int(value["end"]), value.get("text", ""))
                )
    order = {TITLE: 0, ABSTRACT: 1}
    return {
        name: Code(value, tuple(sorted(spans.get(name, []), key=lambda s: (order.get(s.field, 2), s.start))))
        for name, value in values.items()
        if value
    }
