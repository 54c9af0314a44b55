"""Check a model response against the codebook and audit its evidence.

Servers do not always enforce the schema (enums, lengths, even the shape: some models answer
{"thought": ...}), so everything is checked here, and problems are grouped by variable so the retry
message can name them.
"""

from __future__ import annotations

import json
from collections import defaultdict
from functools import lru_cache
from dataclasses import dataclass, field

from jsonschema import Draft202012Validator

from adri_pipeline.audit import EvidenceAudit, TextIndex, audit_evidence
from adri_pipeline.codebook import Codebook, Variable
from adri_pipeline.prompt import EVIDENCE_MAX_WORDS, Prompt

RESPONSE = "_response"  # problems that belong to no single variable


@dataclass
class CheckedResponse:
    content: dict | None
    problems: dict[str, list[str]] = field(default_factory=dict)
    audits: dict[str, EvidenceAudit] = field(default_factory=dict)

    @property
    def valid(self) -> bool:
        return self.content is not None and not self.problems

    def badness(self) -> int:
        """Fewer failing variables is better; an unreadable response is worst."""
        return 10_000 if self.content is None else len(self.problems)


def is_no_information(var: Variable, value) -> bool:
    waivable = var.no_information()
    if isinstance(value, list):
        return bool(value) and all(v in waivable for v in value)
    if var.type == "boolean":
        return value is False
    return value in waivable


def codebook_examples_text(codebook: Codebook) -> str:
    examples = []
    for var in codebook.variables.values():
        examples += var.examples
        for spec in var.values.values():
            examples += spec.examples
    return "\n".join(examples)


@lru_cache(maxsize=8)
def _validator(schema_json: str) -> Draft202012Validator:
    return Draft202012Validator(json.loads(schema_json))


def check_response(
    content, codebook: Codebook, prompt: Prompt, index: TextIndex, examples_text: str = ""
) -> CheckedResponse:
    if not isinstance(content, dict):
        return CheckedResponse(None, {RESPONSE: ["response is not a JSON object"]})
    problems: dict[str, list[str]] = defaultdict(list)
    unexpected = set(content) - set(codebook.variables)
    if unexpected and not set(content) & set(codebook.variables):
        return CheckedResponse(
            None, {RESPONSE: [f"response ignores the schema (keys {sorted(unexpected)})"]}
        )
    for error in _validator(json.dumps(prompt.schema, sort_keys=True)).iter_errors(content):
        where = str(error.path[0]) if error.path else RESPONSE
        if where == RESPONSE and error.validator == "required":
            missing = error.message.split("'")[1]
            problems[missing].append("missing")
            continue
        problems[where].append(_short(error))

    audits: dict[str, EvidenceAudit] = {}
    for name, var in codebook.variables.items():
        answer = content.get(name)
        if not isinstance(answer, dict) or name in problems:
            continue
        evidence = answer.get("evidencia", "")
        if len(evidence.split()) > EVIDENCE_MAX_WORDS:
            problems[name].append(f"evidence has {len(evidence.split())} words (max {EVIDENCE_MAX_WORDS})")
        audit = audit_evidence(evidence, index, is_no_information(var, answer.get("valor")), examples_text)
        audits[name] = audit
        if audit.status == "absent":
            problems[name].append(f"evidence absent: {audit.reason}")
    return CheckedResponse(content, dict(problems), audits)


def _short(error) -> str:
    path = "/".join(str(p) for p in list(error.path)[1:])
    message = error.message if len(error.message) < 160 else error.message[:157] + "..."
    return f"{path}: {message}" if path else message
