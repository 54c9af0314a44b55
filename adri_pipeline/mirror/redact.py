"""Personal data out of a state before it leaves the caller: the mirror, the log and the state hash
all see the redacted state (the mirror design: "Os dados pessoais são ocultados antes de sair").

Strings, dictionary keys and numbers are all checked: a CPF or phone given as a number
(`"cpf": 12345678909`) is as personal as the same digits in a string.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import math
import re
from decimal import Decimal

_PATTERNS = (
    ("[EMAIL]", re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")),
    # separators as people type them: dots, spaces, dashes, slashes, or none; a CPF or CNPJ is bounded
    # by "no digit next to it", not a word boundary, so digits glued to letters (`cpf12345678909`,
    # `id_12345678909`) count
    ("[CNPJ]", re.compile(r"(?<!\d)\d{2}[.\s]?\d{3}[.\s]?\d{3}[/\s]?\d{4}[-.\s]?\d{2}(?!\d)")),
    ("[CPF]", re.compile(r"(?<!\d)\d{3}[.\s]?\d{3}[.\s]?\d{3}[-.\s]?\d{2}(?!\d)")),
    # a phone's 8 digits are common inside hexadecimal ids and hashes: a phone starts a word
    ("[TELEFONE]", re.compile(r"(?<!\w)0[38]00[\s.-]?\d{3}[\s.-]?\d{4}\b")),  # 0800 123 4567
    ("[TELEFONE]", re.compile(r"(?<!\w)(?:\+?55[\s.-]?)?(?:\(?\d{2}\)?[\s.-]?)?9?\d{4}[-\s.]?\d{4}\b")),
)


# a hexadecimal token this long is a hash or an id (a page id, a digest), not personal data: its
# digit runs are not read as a CPF
_HEX_TOKEN = re.compile(r"\b[0-9a-fA-F]{16,}\b")


class Redactor:
    def __init__(self, names: list[str] | None = None):
        names = sorted({n.strip() for n in names or [] if n.strip()}, key=len, reverse=True)
        # a name's words with any whitespace between them: "Maria  Silva", "Maria\nSilva"
        spelled = (r"\s+".join(re.escape(word) for word in n.split()) for n in names)
        self._names = re.compile(r"\b(?:" + "|".join(spelled) + r")\b", re.IGNORECASE) if names else None

    def text(self, value: str) -> str:
        hashes: list[str] = []

        def set_aside(match: re.Match) -> str:
            hashes.append(match.group(0))
            return f"\x00{len(hashes) - 1}\x00"

        value = _HEX_TOKEN.sub(set_aside, value)
        for placeholder, pattern in _PATTERNS:
            value = pattern.sub(placeholder, value)
        value = self._names.sub("[NOME]", value) if self._names else value
        return re.sub("\x00(\\d+)\x00", lambda m: hashes[int(m.group(1))], value) if hashes else value

    def __call__(self, value, keep: frozenset[str] | set[str] = frozenset()):
        """Redacts strings, keys and numbers inside any JSON-like value; top-level keys in `keep`
        (fields a decision point genuinely needs, listed in its configuration) pass unchanged."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, bool) or value is None:
            return value
        if isinstance(value, (int, float, Decimal)):
            if isinstance(value, float) and not math.isfinite(value):
                return None  # not JSON, and no personal datum either
            digits = str(value) if isinstance(value, int) else f"{value:.0f}" if value == int(value) else ""
            if digits and self.text(digits) != digits:
                return self.text(digits)
            return float(value) if isinstance(value, Decimal) else value
        if isinstance(value, (bytes, bytearray)):
            return self.text(bytes(value).decode("utf-8", errors="replace"))
        if isinstance(value, dict):
            return {(k if k in keep else self.text(str(k))): (v if k in keep else self(v)) for k, v in value.items()}
        if isinstance(value, (list, tuple, set, frozenset)):
            items = sorted(value, key=repr) if isinstance(value, (set, frozenset)) else value
            return [self(v) for v in items]
        return self.text(str(value))  # anything else (dates, objects) as the text it would be logged as


def keyed_state_hash(state: dict, key: bytes) -> str:
    """HMAC-SHA256 of the redacted state: stable for one key, and a guess cannot be confirmed
    against the log without the key."""
    payload = json.dumps(state, sort_keys=True, ensure_ascii=False, default=str).encode()
    return hmac.new(key, payload, hashlib.sha256).hexdigest()
