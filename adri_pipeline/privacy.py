"""Personal data out of everything that leaves the caller or is stored: the mirror's requests, the
shadow log and its quarantine, the warehouse, the judges' prompts, the reports and the routing
datasets all pass through one `Redactor` (the mirror design: "Os dados pessoais são ocultados antes de
sair"; the JEV benchmark design's sources are "anonimizados").

What it replaces:
- e-mails, CPF, CNPJ and phone numbers, by pattern. A CPF or CNPJ is bounded by "no digit next to
  it", so digits glued to letters (`cpf12345678909`) count; a phone glued to letters (`tel987654321`)
  too. A hexadecimal token of 16 or more characters is a hash or an id: its digit runs are not read
  as patterns, except a CPF or CNPJ whose check digits are right (`face12345678909ab`).
- the names a configuration lists (`redact_names`), matched across case, accents and runs of
  whitespace ("joao  SOUZA" for "João Souza");
- with `detect_names`, names the list does not hold: a capitalized first name from Faker's pt_BR and
  pt_PT person lists (about 480 first names), with the capitalized surnames and particles after it.
  It catches common Portuguese names only; a rare name, or one written in lower case, is caught only
  by the list. It also takes places named like people ("Salvador", "Vitória"; a saint's "São Paulo"
  it leaves): on the routing datasets (ha-pt-BR, SGD) the texts it changed were places, so the
  datasets' anonymization lists names only; the mirror gate, whose states are live users', detects.

Strings, dictionary keys and numbers are all checked: a CPF or phone given as a number
(`"cpf": 12345678909`) is as personal as the same digits in a string.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import math
import re
import unicodedata
from decimal import Decimal
from functools import cache

_PATTERNS = (
    ("[EMAIL]", re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")),
    # separators as people type them: dots, spaces, dashes, slashes, or none
    ("[CNPJ]", re.compile(r"(?<!\d)\d{2}[.\s]?\d{3}[.\s]?\d{3}[/\s]?\d{4}[-.\s]?\d{2}(?!\d)")),
    ("[CPF]", re.compile(r"(?<!\d)\d{3}[.\s]?\d{3}[.\s]?\d{3}[-.\s]?\d{2}(?!\d)")),
    ("[TELEFONE]", re.compile(r"(?<!\d)0[38]00[\s.-]?\d{3}[\s.-]?\d{4}(?!\d)")),  # 0800 123 4567
    ("[TELEFONE]", re.compile(r"(?<![\d+])(?:\+?55[\s.-]?)?(?:\(?\d{2}\)?[\s.-]?)?9?\d{4}[-\s.]?\d{4}(?!\d)")),
)

# a hexadecimal token this long is a hash or an id (a page id, a digest): only a CPF or CNPJ with
# valid check digits is read inside it
_HEX_TOKEN = re.compile(r"(?<![0-9A-Za-z])[0-9a-fA-F]{16,}(?![0-9A-Za-z])")
_DIGIT_RUN = re.compile(r"\d{11,}")

# accented letters a name may be written with or without
_VARIANTS = {"a": "aáàâãä", "e": "eéèêë", "i": "iíìîï", "o": "oóòôõö", "u": "uúùûü", "c": "cç", "n": "nñ"}
_PARTICLES = ("da", "de", "do", "das", "dos", "e")
_SAINTS = {"sao", "santa", "santo", "san", "saint", "st."}


def folded(text: str) -> str:
    """`text` with its accents taken off ("ação" -> "acao")."""
    return "".join(c for c in unicodedata.normalize("NFD", text) if not unicodedata.combining(c))


def _spelled(word: str) -> str:
    """A word as a pattern that takes it with or without accents (case is the regex's flag)."""
    return "".join(f"[{_VARIANTS[c]}]" if c in _VARIANTS else re.escape(c) for c in folded(word).lower())


def _check_digits(digits: str, weights: list[list[int]]) -> bool:
    body = [int(d) for d in digits]
    for position, weight in zip(range(len(digits) - len(weights), len(digits)), weights):
        remainder = sum(d * w for d, w in zip(body, weight)) % 11
        if body[position] != (0 if remainder < 2 else 11 - remainder):
            return False
    return len(set(digits)) > 1


def valid_cpf(digits: str) -> bool:
    return len(digits) == 11 and _check_digits(digits, [list(range(10, 1, -1)), list(range(11, 1, -1))])


def valid_cnpj(digits: str) -> bool:
    return len(digits) == 14 and _check_digits(digits, [[5, 4, 3, 2, 9, 8, 7, 6, 5, 4, 3, 2],
                                                        [6, 5, 4, 3, 2, 9, 8, 7, 6, 5, 4, 3, 2]])


def _inside_hex(token: str) -> str:
    """A hash-like token kept as it is, but for a CPF or CNPJ with valid check digits in it."""
    def run(match: re.Match) -> str:
        digits = match.group(0)
        for size, placeholder, valid in ((14, "[CNPJ]", valid_cnpj), (11, "[CPF]", valid_cpf)):
            for start in range(len(digits) - size + 1):
                if valid(digits[start:start + size]):
                    return digits[:start] + placeholder + digits[start + size:]
        return digits
    return _DIGIT_RUN.sub(run, token)


def _zeros_dropped(digits: str) -> str | None:
    """A CPF or CNPJ kept as a number has lost its leading zeros (`00.100.000/0008-30` becomes
    100000000830): a number of 7 digits or more whose zero-padded form has valid check digits is
    taken for one. Shorter numbers are taken for counts (a padded 191 is a valid CPF)."""
    if len(digits) < 7:
        return None
    if len(digits) < 11 and valid_cpf(digits.zfill(11)):
        return "[CPF]"
    if len(digits) < 14 and valid_cnpj(digits.zfill(14)):
        return "[CNPJ]"
    return None


@cache
def _first_names() -> frozenset[str]:
    """Faker's pt_BR and pt_PT first names, lower case and without accents."""
    from faker.providers.person.pt_BR import Provider as Brazil
    from faker.providers.person.pt_PT import Provider as Portugal

    names = set()
    for provider in (Brazil, Portugal):
        for name in (*provider.first_names_female, *provider.first_names_male):
            names.update(folded(part).lower() for part in name.split())
    return frozenset(names)


_CAPITALIZED = r"[A-ZÀ-ÖØ-Þ][\wÀ-ÿ'’-]*"
_PROPER_RUN = re.compile(rf"\b{_CAPITALIZED}(?:\s+(?:(?:{'|'.join(_PARTICLES)})\s+)?{_CAPITALIZED})*")


class Redactor:
    def __init__(self, names: list[str] | tuple[str, ...] | None = None, detect_names: bool = False):
        names = sorted({" ".join(n.split()) for n in names or [] if n.strip()}, key=len, reverse=True)
        spelled = (r"\s+".join(_spelled(word) for word in n.split()) for n in names)
        self._names = re.compile(r"(?<!\w)(?:" + "|".join(spelled) + r")(?!\w)", re.IGNORECASE) if names else None
        self.detect_names = detect_names
        if detect_names:  # loaded now, not on the first text: the gate's first decision waited for it
            _first_names()

    def _detected(self, value: str) -> str:
        known = _first_names()

        def run(match: re.Match) -> str:
            words = match.group(0).split()
            # "São Paulo", "Santa Clara": a first name after a saint's title is a place
            first = next((i for i, w in enumerate(words) if folded(w).lower() in known
                          and not (i and folded(words[i - 1]).lower() in _SAINTS)), None)
            if first is None:
                return match.group(0)
            # the name starts at its first name: a capitalized word before it ("Oi Maria") stays
            return " ".join(words[:first] + ["[NOME]"])
        return _PROPER_RUN.sub(run, value)

    def text(self, value: str) -> str:
        value = unicodedata.normalize("NFC", value)
        hashes: list[str] = []

        def set_aside(match: re.Match) -> str:
            hashes.append(_inside_hex(match.group(0)))
            return f"\x00{len(hashes) - 1}\x00"

        value = _HEX_TOKEN.sub(set_aside, value)
        for placeholder, pattern in _PATTERNS:
            value = pattern.sub(placeholder, value)
        value = self._names.sub("[NOME]", value) if self._names else value
        value = self._detected(value) if self.detect_names else value
        return re.sub("\x00(\\d+)\x00", lambda m: hashes[int(m.group(1))], value) if hashes else value

    def __call__(self, value, keep: frozenset[str] | set[str] = frozenset()):
        """Redacts strings, keys and numbers inside any JSON-like value; top-level keys in `keep`
        (the fields a decision point shows its mirror, `expose_fields`) pass unchanged. Only the
        mirror's request keeps them: what is stored is redacted whole."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, bool) or value is None:
            return value
        if isinstance(value, (int, float, Decimal)):
            if isinstance(value, float) and not math.isfinite(value):
                return None  # not JSON, and no personal datum either
            digits = str(abs(int(value))) if value == int(value) else ""
            if digits and self.text(digits) != digits:
                return self.text(digits)
            if _zeros_dropped(digits):
                return _zeros_dropped(digits)
            return float(value) if isinstance(value, Decimal) else value
        if isinstance(value, (bytes, bytearray)):
            return self.text(bytes(value).decode("utf-8", errors="replace"))
        if isinstance(value, dict):
            return {(k if k in keep else self.text(str(k))): (v if k in keep else self(v)) for k, v in value.items()}
        if isinstance(value, (list, tuple, set, frozenset)):
            items = sorted(value, key=repr) if isinstance(value, (set, frozenset)) else value
            return [self(v) for v in items]
        return self.text(str(value))  # anything else (dates, objects) as the text it would be logged as

    def stored(self, record: dict) -> dict:
        """A shadow-log record as it may be stored: its state redacted whole (exposed fields too) and
        every field a writer fills with text of its choosing (STORED_TEXT_FIELDS)."""
        return {**record, "state": self(record.get("state") or {}),
                **{k: self.text(record[k]) for k in STORED_TEXT_FIELDS if isinstance(record.get(k), str)}}


# fields any writer fills with text it chose: a rule that answers with the user's e-mail instead of an
# option puts it there, so they are redacted like the state
STORED_TEXT_FIELDS = ("rule_decision", "mirror_decision", "outcome", "truth", "task_id")


def keyed_state_hash(state: dict, key: bytes) -> str:
    """HMAC-SHA256 of the redacted state: stable for one key, and a guess cannot be confirmed
    against the log without the key."""
    payload = json.dumps(state, sort_keys=True, ensure_ascii=False, default=str).encode()
    return hmac.new(key, payload, hashlib.sha256).hexdigest()
