"""A team's own canonical files, in the JEV design's JSON-lines format: every line checked, a broken one
named by file, line and field (a team fixes its file, not a traceback); gold is the adjudicated label, and
examples whose annotators disagree with no adjudication are excluded and counted."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from adri_pipeline.errors import AdriError, describe_validation_error, read_utf8
from adri_pipeline.jev.examples import CanonicalExample


class CanonicalFileError(AdriError, ValueError):
    """A line of a canonical file that does not follow the format; names the file, line and field."""


@dataclass
class CanonicalFile:
    examples: list[CanonicalExample]
    where: dict[str, str]  # example id -> "<file>: line N"
    # ("<file>: line N", example) for examples whose two annotators disagree with no adjudication: not
    # scored, but their labels still count in the agreement between annotators
    excluded: list[tuple[str, CanonicalExample]]
    # a built-in dataset's test split used as a test file: the hash it was frozen with (checked)
    frozen_hash: str | None = None


def load_canonical(path: Path) -> list[CanonicalExample]:
    """Every example of a JSON-lines file (or of every .jsonl file in a folder), each line checked."""
    return located_canonical(path).examples


def with_adjudicated_gold(example: CanonicalExample) -> CanonicalExample | None:
    """The gold the benchmark scores against: the adjudicated label when there is one; None when two
    annotators disagree and nobody adjudicated (such an example is excluded, and counted)."""
    if example.adjudicated_label is not None:
        return CanonicalExample.model_validate(example.model_dump() | {"gold_label": example.adjudicated_label})
    first, second, *_ = example.annotator_labels + [None, None]
    if first is not None and second is not None and _label_key(first) != _label_key(second):
        return None
    return example


def _label_key(label) -> tuple:
    return tuple(sorted(label)) if isinstance(label, list) else (label,)


def located_canonical(path: Path) -> CanonicalFile:
    """The examples of a canonical file or folder, each line checked, with where each was read and
    which were excluded (annotators disagree, no adjudicated label); gold is the adjudicated label
    when present."""
    from pydantic import ValidationError

    files = sorted(path.glob("*.jsonl")) if path.is_dir() else [path]
    if not files or not all(f.is_file() for f in files):
        raise CanonicalFileError(f"{path}: no canonical JSON-lines file here")
    examples, seen, where, excluded = [], {}, {}, []
    for file in files:
        for number, line in enumerate(read_utf8(file, CanonicalFileError).splitlines(), start=1):
            if not line.strip():
                continue
            try:
                example = CanonicalExample.model_validate_json(line)
            except ValidationError as exc:
                problem = exc.errors()[0]
                if problem["type"] == "json_invalid":
                    raise CanonicalFileError(f"{file}: line {number}: not valid JSON ({problem['msg']})") from None
                raise CanonicalFileError(f"{file}: line {number}: {describe_validation_error(problem)}") from None
            if example.id in seen:
                raise CanonicalFileError(f"{file}: line {number}: id {example.id!r} repeats line {seen[example.id]}")
            seen[example.id] = number
            try:
                scored = with_adjudicated_gold(example)
            except ValidationError as exc:
                raise CanonicalFileError(
                    f"{file}: line {number}: adjudicated_label: {describe_validation_error(exc.errors()[0])}"
                ) from None
            if scored is None:
                excluded.append((f"{file}: line {number}", example))
                continue
            examples.append(scored)
            where[example.id] = f"{file}: line {number}"
    if not examples:
        raise CanonicalFileError(
            f"{path}: no examples"
            + (f" ({len(excluded)} excluded: annotators disagree with no adjudicated label)" if excluded else "")
        )
    return CanonicalFile(examples, where, excluded)
