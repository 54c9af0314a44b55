"""The System One request as a pydantic model of the published schema
(contracts/jev/schemas/request.schema.json): what `adri routing serve` validates a body with, so that
its 422s are the framework's (FastAPI's shape: `{"detail": [{"loc": ["body", ...], "msg", "type"}]}`).
The JSON is parsed by pydantic too: invalid UTF-8, nesting deeper than its recursion limit and bad
JSON are `json_invalid` errors, never a crash. A test holds the model to the schema."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, TypeAdapter, ValidationError

Text = str | dict[str, Any] | list[Any]  # instructions, descriptions and states: text, an object or an array


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class NoulCriteria(_Strict):
    true: Text | None = None
    false: Text | None = None


class NoulQuestion(_Strict):
    type: Literal["noul"]
    instructions: Text | None = None
    criteria: NoulCriteria | None = None


class ChoiceQuestion(_Strict):
    type: Literal["choice"]
    instructions: Text | None = None
    criteria: Annotated[dict[str, Text | None], Field(min_length=1, max_length=255)]


class ScoreQuestion(_Strict):
    type: Literal["score"]
    instructions: Text | None = None
    criteria: Annotated[list[Text], Field(min_length=1, max_length=10)]


Question = Annotated[NoulQuestion | ChoiceQuestion | ScoreQuestion, Field(discriminator="type")]


class SystemOneRequest(BaseModel):
    model_config = ConfigDict(extra="allow")  # unknown top-level fields are ignored (extensions: x_...)

    model: str
    state: Text
    questions: Annotated[dict[Annotated[str, StringConstraints(min_length=1)], Question], Field(min_length=1)]
    assets: dict[str, Any] | None = None


_ADAPTER = TypeAdapter(SystemOneRequest)


def parse_request(raw: bytes) -> tuple[dict | None, list[dict]]:
    """(the request as the wire's dict, []) or (None, FastAPI-shaped error details)."""
    try:
        request = _ADAPTER.validate_json(raw)
    except ValidationError as exc:
        return None, [
            {"loc": ["body", *error["loc"]], "msg": error["msg"], "type": error["type"]}
            for error in exc.errors(include_url=False, include_input=False, include_context=False)
        ]
    return request.model_dump(mode="json", exclude_unset=True), []
