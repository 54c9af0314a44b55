"""Codebook: the variables a document is classified on, validated with errors that point at the spot.

What the model reads (instructions, definitions, value descriptions, examples) is kept apart from
what only people read (`version`, `labels`), so the prompt signature ignores the latter.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path
from typing import Literal

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from adri_pipeline.errors import AdriError, describe_validation_error

NO_INFORMATION_VALUES = ("nao_informado", "nao_se_aplica")
VariableType = Literal["enum", "list", "boolean", "text"]
_IDENTIFIER = re.compile(r"^[a-z][a-z0-9_]*$")


class CodebookError(AdriError, ValueError):
    """Raised with the file, line or variable and field that is wrong."""


class ValueSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")
    description: str = Field(min_length=3)
    examples: list[str] = Field(default_factory=list)


class Variable(BaseModel):
    model_config = ConfigDict(extra="forbid")
    type: VariableType
    definition: str = Field(min_length=3)
    examples: list[str] = Field(default_factory=list)
    values: dict[str, ValueSpec] = Field(default_factory=dict)
    labels: dict[str, str] = Field(default_factory=dict)

    @field_validator("values", mode="before")
    @classmethod
    def _stringify_keys(cls, values):
        # YAML reads true/false keys as booleans; the codebook speaks in strings.
        if isinstance(values, dict):
            return {str(k).lower() if isinstance(k, bool) else str(k): v for k, v in values.items()}
        return values

    @field_validator("labels", mode="before")
    @classmethod
    def _stringify_label_keys(cls, labels):
        return cls._stringify_keys(labels)

    @model_validator(mode="after")
    def _check_values(self) -> "Variable":
        for value in self.values:
            if not _IDENTIFIER.match(value) and value not in ("true", "false"):
                raise ValueError(f"values: {value!r} is not a lowercase identifier (a-z, 0-9, _)")
        if self.type in ("enum", "list"):
            informative = [v for v in self.values if v not in NO_INFORMATION_VALUES]
            if not informative:
                raise ValueError(f"values: a {self.type} variable needs at least one informative value")
            if "nao_informado" not in self.values:
                raise ValueError(f"values: a {self.type} variable must offer 'nao_informado'")
        elif self.type == "boolean":
            if set(self.values) - {"true", "false"}:
                raise ValueError("values: a boolean variable may only describe 'true' and 'false'")
        elif self.type == "text":
            if set(self.values) - set(NO_INFORMATION_VALUES):
                raise ValueError("values: a text variable may only describe no-information values")
        unknown = set(self.labels) - set(self.allowed_values())
        if unknown:
            raise ValueError(f"labels: label for unknown value(s) {sorted(unknown)}")
        return self

    def allowed_values(self) -> list[str]:
        if self.type == "boolean":
            return ["true", "false"]
        return list(self.values)

    def no_information(self) -> tuple:
        """Answers for which an empty evidence is acceptable (waived)."""
        if self.type == "boolean":
            return (False,)
        return tuple(v for v in NO_INFORMATION_VALUES if v in self.values or self.type == "text")

    def label(self, value) -> str:
        key = str(value).lower() if isinstance(value, bool) else str(value)
        return self.labels.get(key, key)


class Codebook(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str = Field(min_length=1)
    version: str = Field(min_length=1)
    language: str = "pt"
    instructions: str = Field(min_length=10)
    variables: dict[str, Variable] = Field(min_length=1)
    content_hash: str = Field(default="", exclude=True)
    source: str = Field(default="", exclude=True)

    @field_validator("version", mode="before")
    @classmethod
    def _version_as_text(cls, version):
        return str(version) if isinstance(version, (int, float)) else version

    @field_validator("variables")
    @classmethod
    def _variable_names(cls, variables):
        for name in variables:
            if not _IDENTIFIER.match(name):
                raise ValueError(f"variable name {name!r} is not a lowercase identifier (a-z, 0-9, _)")
        return variables


class _UniqueKeyLoader(yaml.SafeLoader):
    """SafeLoader that refuses duplicate keys instead of silently keeping the last one."""


def _construct_mapping(loader: _UniqueKeyLoader, node: yaml.MappingNode, deep: bool = False):
    seen: dict = {}
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        if key in seen:
            raise CodebookError(
                f"{loader.name}: line {key_node.start_mark.line + 1}: duplicate key {key!r} "
                f"(first at line {seen[key] + 1})"
            )
        seen[key] = key_node.start_mark.line
    return loader.construct_mapping(node, deep=deep)


_UniqueKeyLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def parse_codebook(text: str, source: str = "<codebook>") -> Codebook:
    try:
        loader = _UniqueKeyLoader(text)
        loader.name = source
        try:
            raw = loader.get_single_data()
        finally:
            loader.dispose()
    except yaml.YAMLError as exc:
        raise CodebookError(f"{source}: not valid YAML: {exc}") from None
    if not isinstance(raw, dict):
        raise CodebookError(f"{source}: expected a mapping at the top level")
    try:
        codebook = Codebook.model_validate(raw)
    except ValidationError as exc:
        problems = "; ".join(describe_validation_error(e, "variables", "variable") for e in exc.errors())
        raise CodebookError(f"{source}: {problems}") from None
    codebook.content_hash = hashlib.sha256(text.encode("utf-8")).hexdigest()
    codebook.source = source
    return codebook


def load_codebook(path: str | Path) -> Codebook:
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise CodebookError(f"{path}: codebook file not found") from None
    except UnicodeDecodeError as exc:
        raise CodebookError(f"{path}: not UTF-8 at byte {exc.start}") from None
    return parse_codebook(text, source=str(path))
