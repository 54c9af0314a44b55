"""One base for the errors a user can act on (`AdriError`: the CLI prints its message and exits 2),
and one way to say what is wrong in a validated file: the entry (variable, decision point) and the field."""

from __future__ import annotations

import re


class AdriError(Exception):
    """Bad input or a missing service, said so that the user knows what to do; nothing stored was changed."""


def describe_validation_error(error: dict, collection: str = "", noun: str = "") -> str:
    """A pydantic error as "variable 'x', field 'y': message" (entries of `collection` named by `noun`)
    or "field 'y': message"."""
    loc = [str(part) for part in error["loc"]]
    where = ""
    if collection and len(loc) >= 2 and loc[0] == collection:
        where = f"{noun} {loc[1]!r}"
        if loc[2:]:
            where += f", field {'.'.join(loc[2:])!r}"
    elif loc:
        where = f"field {'.'.join(loc)!r}"
    message = error["msg"].removeprefix("Value error, ")
    field_first = re.match(r"^(\w+): (.*)$", message, re.DOTALL)
    if field_first and where and "field" not in where:
        where += f", field {field_first.group(1)!r}"
        message = field_first.group(2)
    return f"{where}: {message}" if where else message


def read_utf8(path, error: type[AdriError]) -> str:
    """A text file the user gave, or `error` naming the file and the first byte that is not UTF-8."""
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read()
    except UnicodeDecodeError as exc:
        raise error(f"{path}: not UTF-8 at byte {exc.start}") from None
