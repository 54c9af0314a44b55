"""Contract jev-compat-v1: JSON Schemas in adri_pipeline/bundled/contracts/jev/schemas, and the check that discards
answers naming an option the question did not offer."""

from __future__ import annotations

import json
from functools import lru_cache

from jsonschema import Draft202012Validator

from adri_pipeline.config import BUNDLED
from adri_pipeline.errors import AdriError

CONTRACT = "jev-compat-v1"
SCHEMAS = BUNDLED / "contracts" / "jev" / "schemas"


class ContractError(AdriError, ValueError):
    pass


class RoutingConfigError(AdriError, ValueError):
    """An unknown dataset or candidate, or data that is not here; the message says which."""


@lru_cache(maxsize=2)
def validator(kind: str) -> Draft202012Validator:
    return Draft202012Validator(json.loads((SCHEMAS / f"{kind}.schema.json").read_text(encoding="utf-8")))


def validate(kind: str, document: dict) -> None:
    errors = sorted(validator(kind).iter_errors(document), key=lambda e: list(e.path))
    if errors:
        where = "/".join(str(p) for p in errors[0].path) or "(root)"
        raise ContractError(f"{kind} does not follow {CONTRACT} at {where}: {errors[0].message}")


def usable_answers(request: dict, response: dict) -> tuple[dict, list[str]]:
    """Answers whose option was offered; the others are discarded and reported (question names)."""
    validate("response", response)
    usable, discarded = {}, []
    for name, question in request["questions"].items():
        answer = response["answers"].get(name)
        offered = question["type"] == "score" or str(answer["answer"]) in question["criteria"] if answer else False
        if not offered:
            discarded.append(name)
            continue
        usable[name] = answer
    return usable, discarded
