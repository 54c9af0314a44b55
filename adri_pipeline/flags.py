"""Command-line flags from the fields that declare them: each field of `Settings` (and of a command's
own options model in cli.py) says, with a `Flag` in its annotation, on which commands it is a flag
and under which other spellings (the Portuguese ones users know). The parser is generated from
those declarations, so a setting is declared once, typed once and validated by pydantic on the
command line as in the environment.

Why not pydantic-settings' own CLI: it parses one model, whereas each `adri` command takes a
different subset of the one Settings object plus options of its own, keeps argparse's usage and
error lines, and must leave the ADRI_* variables in charge of whatever a flag does not give.
"""

from __future__ import annotations

import argparse
import types
import typing
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, TypeAdapter, ValidationError


@dataclass(frozen=True)
class Flag:
    """How a field is given on the command line."""

    commands: tuple[str, ...] = ()  # where it is a flag; () for a setting read from ADRI_* only
    aliases: tuple[str, ...] = ()  # other spellings, e.g. "--livro"
    help: str = ""
    name: str = ""  # the flag when it is not --<field-name>
    required: tuple[str, ...] = ()  # commands on which it must be given
    positional: bool = False
    actions: tuple[str, ...] = ()  # a command with actions (`adri mirror replay`): those it belongs to; () all
    env_only: str = ""  # commands=(): why no command takes it as a flag
    path: str = ""  # a file or folder: its kind (adri_pipeline/paths.py KINDS), checked before the command runs
    written_by: tuple[str, ...] = ()  # the actions on which the path is an output instead (`mirror replay --log`)


def flag_of(field) -> Flag | None:
    return next((m for m in field.metadata if isinstance(m, Flag)), None)


def _plain(annotation):
    """The type under Optional / Annotated."""
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        annotation = next(a for a in typing.get_args(annotation) if a is not type(None))
    return annotation


def _converter(field, option: str):
    """argparse's `type`: the text validated as the field is (its constraints included), with the
    error said as a flag's."""
    adapter = TypeAdapter(
        typing.Annotated[tuple([_plain(field.annotation), *field.metadata])]
        if field.metadata
        else _plain(field.annotation)
    )

    def convert(text: str):
        try:
            return adapter.validate_python(text if _plain(field.annotation) is not Path else Path(text))
        except ValidationError as exc:
            error = exc.errors()[0]
            bound = error.get("ctx", {})
            message = (
                f"must be at least {bound['ge']} (got {text})"
                if "ge" in bound
                else f"must be at most {bound['le']} (got {text})"
                if "le" in bound
                else error["msg"]
            )
            raise argparse.ArgumentTypeError(message) from None

    convert.__name__ = option
    return convert


def actions_of(model: type[BaseModel]) -> tuple[str, ...]:
    """The choices of a command's positional `action` field (`adri mirror replay|evaluate|…`), or ()."""
    field = model.model_fields.get("action")
    flag = field and flag_of(field)
    if not (flag and flag.positional and typing.get_origin(field.annotation) is typing.Literal):
        return ()
    return typing.get_args(field.annotation)


def path_flags(
    model: type[BaseModel], command: str, action: str | None = None, every_field: bool = False
) -> list[tuple[str, str, str]]:
    """(field name, flag, kind) of each path flag of `model` on `command` (and `action`): what
    paths.check reads before the command runs."""
    found = []
    for name, field in model.model_fields.items():
        flag = flag_of(field)
        if flag is None or not flag.path or not (every_field or command in flag.commands):
            continue
        if action is not None and flag.actions and action not in flag.actions:
            continue
        kind = "output" if action in flag.written_by else flag.path
        found.append((name, flag.name or "--" + name.replace("_", "-"), kind))
    return found


def add_flags(
    parser: argparse.ArgumentParser,
    command: str,
    model: type[BaseModel],
    every_field: bool = False,
    action: str | None = None,
) -> None:
    """The fields of `model` that declare themselves flags of `command` (`every_field`: all its fields
    with a Flag, a command's own options), as argparse arguments whose destination is the field's
    name; an absent flag stays None, so the environment and the defaults decide. With `action`, the
    parser is that action's own (`adri mirror replay --help` lists replay's flags only)."""
    for name, field in model.model_fields.items():
        flag = flag_of(field)
        if flag is None or not (every_field or command in flag.commands):
            continue
        if action is not None and (name == "action" or (flag.actions and action not in flag.actions)):
            continue
        kind = _plain(field.annotation)
        spelled = flag.name or "--" + name.replace("_", "-")
        prefix = model.model_config.get("env_prefix")
        options: dict = {"help": " ".join(filter(None, [flag.help, prefix and f"[{prefix}{name.upper()}]"])) or None}
        if typing.get_origin(kind) is typing.Literal:
            options["choices"] = typing.get_args(kind)
        elif kind is bool:
            options["action"] = "store_true"
        else:
            # a list is comma-separated text, split by the model's own validator
            options["type"] = str if typing.get_origin(kind) is list else _converter(field, spelled)
            options["metavar"] = name.upper() if flag.positional else spelled.lstrip("-").upper().replace("-", "_")
        if flag.positional:
            is_optional = field.default is None or not field.is_required()
            parser.add_argument(name, nargs="?" if is_optional else None, **options)
            continue
        options |= {"dest": name, "required": command in flag.required}
        parser.add_argument(spelled, *flag.aliases, **({"default": None} | options))
