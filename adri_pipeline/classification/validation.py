"""Check a model response against the codebook and audit its evidence.

Servers do not always enforce the schema (enums, lengths, even the shape: some models answer
{"thought": ...}), so everything is checked here, and problems are grouped by variable so the retry
message can name them.

"Valid" means the answer follows the codebook (parses, fits the schema, values from the codebook).
Absent evidence is not a codebook violation: it asks for the one retry and is then recorded as an
audit status (ADR 0011 reports "ausente 1,7%" among stored answers). Evidence over 20 words is a
flag on the answer; the schema already caps it at 200 characters.
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass, field
from functools import lru_cache

from jsonschema import Draft202012Validator

from adri_pipeline.classification.audit import DocumentIndex, EvidenceAudit, audit_evidence
from adri_pipeline.classification.codebook import Codebook, Variable
from adri_pipeline.classification.prompt import EVIDENCE_MAX_WORDS, Prompt

RESPONSE = "_response"  # problems that belong to no single variable


CODEBOOK_VALIDATORS = {"enum", "uniqueItems"}  # schema checks about the codebook's values, not the JSON's shape


@dataclass
class CheckedResponse:
    content: dict | None
    problems: dict[str, list[str]] = field(default_factory=dict)  # codebook violations, by variable
    audits: dict[str, EvidenceAudit] = field(default_factory=dict)
    flags: dict[str, list[str]] = field(default_factory=dict)  # e.g. evidence over 20 words
    json_valid: bool = False  # parses and has the schema's shape (values aside)

    @property
    def valid(self) -> bool:
        """Follows the codebook: may be cached even with an absent quote."""
        return self.content is not None and not self.problems

    @property
    def absent(self) -> list[str]:
        return [name for name, audit in self.audits.items() if audit.status == "absent"]

    @property
    def needs_retry(self) -> bool:
        return not self.valid or bool(self.absent)

    def retry_reasons(self) -> dict[str, list[str]]:
        """What the retry message names: codebook violations, then absent evidence."""
        reasons = {name: list(items) for name, items in self.problems.items()}
        for name in self.absent:
            reasons.setdefault(name, []).append(f"evidence absent: {self.audits[name].reason}")
        return reasons

    def badness(self) -> tuple[int, int, int]:
        """An answer off the codebook is worse than any that follows it; then fewer failing
        variables, then fewer absent quotes."""
        if self.content is None:
            return (1, 10_000, 0)
        return (int(not self.valid), len(self.problems), len(self.absent))


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
    content, codebook: Codebook, prompt: Prompt, index: DocumentIndex, examples_text: str = "", cut: bool = False
) -> CheckedResponse:
    """`cut`: the server stopped the answer at its length cap (said so in the reason)."""
    if not isinstance(content, dict):
        why = " (cut at the answer-length cap, ADRI_MAX_TOKENS)" if cut else ""
        return CheckedResponse(None, {RESPONSE: [f"response is not a JSON object{why}"]})
    problems: dict[str, list[str]] = defaultdict(list)
    json_valid = True
    unexpected = set(content) - set(codebook.variables)
    if unexpected and not set(content) & set(codebook.variables):
        return CheckedResponse(None, {RESPONSE: [f"response ignores the schema (keys {sorted(unexpected)})"]})
    for error in _validator(json.dumps(prompt.schema, sort_keys=True)).iter_errors(content):
        where = str(error.path[0]) if error.path else RESPONSE
        json_valid &= error.validator in CODEBOOK_VALIDATORS
        if where == RESPONSE and error.validator == "required":
            missing = error.message.split("'")[1]
            problems[missing].append("missing")
            continue
        problems[where].append(_short(error))

    audits: dict[str, EvidenceAudit] = {}
    flags: dict[str, list[str]] = {}
    for name, var in codebook.variables.items():
        answer = content.get(name)
        if not isinstance(answer, dict) or name in problems:
            continue
        evidence = answer.get("evidencia", "")
        if len(evidence.split()) > EVIDENCE_MAX_WORDS:
            flags[name] = [f"evidence has {len(evidence.split())} words (max {EVIDENCE_MAX_WORDS})"]
        audits[name] = audit_evidence(evidence, index, is_no_information(var, answer.get("valor")), examples_text)
    return CheckedResponse(content, dict(problems), audits, flags, json_valid)


def _short(error) -> str:
    path = "/".join(str(p) for p in list(error.path)[1:])
    message = error.message if len(error.message) < 160 else error.message[:157] + "..."
    return f"{path}: {message}" if path else message
