"""Personal data out of shadow-log records before anything is written."""

from __future__ import annotations

import re

_PATTERNS = (
    ("[EMAIL]", re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")),
    ("[CNPJ]", re.compile(r"\b\d{2}\.?\d{3}\.?\d{3}/?\d{4}-?\d{2}\b")),
    ("[CPF]", re.compile(r"\b\d{3}\.?\d{3}\.?\d{3}-?\d{2}\b")),
    ("[TELEFONE]", re.compile(r"(?<!\w)(?:\+?55\s?)?(?:\(?\d{2}\)?\s?)?9?\d{4}[-\s]?\d{4}\b")),
)


class Redactor:
    def __init__(self, names: list[str] | None = None):
        names = sorted({n.strip() for n in names or [] if n.strip()}, key=len, reverse=True)
        self._names = re.compile(r"\b(?:" + "|".join(re.escape(n) for n in names) + r")\b", re.IGNORECASE) if names else None

    def text(self, value: str) -> str:
        for placeholder, pattern in _PATTERNS:
            value = pattern.sub(placeholder, value)
        return self._names.sub("[NOME]", value) if self._names else value

    def __call__(self, value):
        """Redacts strings inside any JSON-like value."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return {k: self(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self(v) for v in value]
        return value
