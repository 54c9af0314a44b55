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
- with `detect_names`, names the list does not hold (recall and false positives measured on written
  sets in docs/guide-mirror.md): capitalized runs with a first name of any Faker locale written in
  Latin letters, or ending in a known surname, or after a word that introduces a person ("para",
  "cliente"); a capitalized word after a title ("Sr.", "Dra."); a lower-case first name after "com",
  "para", "o", "da", ... (not a common word such as "rosa"). Known places named like people (Brazilian
  capitals, states, Portugal's cities, countries; a saint's "São Paulo"), months and days stay. It
  still takes some places, shops and greetings for names ("Rua Augusta", "Olá"): on the routing
  datasets (ha-pt-BR, SGD) the texts it changed were places, so the datasets' anonymization lists
  names only; the mirror gate, whose states are live users', detects.

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
from functools import cache, lru_cache
from pathlib import Path

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
    return len(digits) == 14 and _check_digits(
        digits, [[5, 4, 3, 2, 9, 8, 7, 6, 5, 4, 3, 2], [6, 5, 4, 3, 2, 9, 8, 7, 6, 5, 4, 3, 2]]
    )


def _inside_hex(token: str) -> str:
    """A hash-like token kept as it is, but for a CPF or CNPJ with valid check digits in it."""

    def run(match: re.Match) -> str:
        digits = match.group(0)
        for size, placeholder, valid in ((14, "[CNPJ]", valid_cnpj), (11, "[CPF]", valid_cpf)):
            for start in range(len(digits) - size + 1):
                if valid(digits[start : start + size]):
                    return digits[:start] + placeholder + digits[start + size :]
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


NAME_LISTS = Path(__file__).parent / "bundled" / "privacy" / "names.json"
# Portuguese words that are also first names: taken for a name only when capitalised
_COMMON_WORDS = frozenset(
    "rosa luz paz cruz clara gloria graca gracas vitoria aurora dores socorro neves mercedes pilar amparo estrela "
    "flor mar sol bento franco justo santos natal pascoa conceicao assuncao fe esperanca celeste serena".split()
)
_MONTHS_AND_DAYS = frozenset(
    "janeiro fevereiro marco abril maio junho julho agosto setembro outubro novembro dezembro january february "
    "march april may june july august september october november december domingo segunda terca quarta quinta "
    "sexta sabado sunday monday tuesday wednesday thursday friday saturday".split()
)
_TITLES = r"(?:sr|sra|srta|dr|dra|prof|profa|dona|seu|mr|mrs|ms|miss)"
# a lower-case first name right after these is someone's ("falei com joão", "o pedido da francisca")
_PERSON_CUES = frozenset("com para pra pro o a da do de cliente sou avisa ligar falar chamar".split())


# places named like people, never taken for a name: the Brazilian state capitals and a few large cities
# (with the states, Portugal's cities and the countries Faker lists)
BRAZILIAN_CITIES = (
    "Rio Branco",
    "Maceió",
    "Macapá",
    "Manaus",
    "Salvador",
    "Fortaleza",
    "Brasília",
    "Vitória",
    "Goiânia",
    "São Luís",
    "Cuiabá",
    "Campo Grande",
    "Belo Horizonte",
    "Belém",
    "João Pessoa",
    "Curitiba",
    "Recife",
    "Teresina",
    "Rio de Janeiro",
    "Natal",
    "Porto Alegre",
    "Porto Velho",
    "Boa Vista",
    "Florianópolis",
    "São Paulo",
    "Aracaju",
    "Palmas",
    "Campinas",
    "Santos",
    "Guarulhos",
    "Londrina",
    "Joinville",
    "Niterói",
    "Vitória da Conquista",
    "Juiz de Fora",
    "Ribeirão Preto",
    "Uberlândia",
    "Sorocaba",
    "Feira de Santana",
)


def faker_name_lists() -> dict[str, list[str]]:
    """First and last names of every Faker locale written in Latin letters, Faker's pt_BR and pt_PT first
    names, and places named like people, lower case without accents: what NAME_LISTS holds (read from a file:
    importing the 86 locales takes seconds, the file milliseconds; a test checks the file is what this
    returns)."""
    import importlib
    import pkgutil

    import faker.providers.person as person

    def plain(names) -> set[str]:
        names = names.keys() if isinstance(names, dict) else names if isinstance(names, (list, tuple)) else ()
        out = {folded(part).lower() for name in names if isinstance(name, str) for part in name.split()}
        return {n for n in out if re.fullmatch(r"[a-z][a-z'-]+", n)}

    first, last, portuguese = set(), set(), set()
    for locale in sorted(m.name for m in pkgutil.iter_modules(person.__path__)):
        provider = importlib.import_module(f"faker.providers.person.{locale}").Provider
        given = set().union(
            *(
                plain(getattr(provider, a, ()))
                for a in ("first_names", "first_names_male", "first_names_female", "first_names_nonbinary")
            )
        )
        first |= given
        last |= plain(getattr(provider, "last_names", ()))
        if locale in ("pt_BR", "pt_PT"):
            portuguese |= given
    from faker.providers.address.pt_BR import Provider as BrazilAddress
    from faker.providers.address.pt_PT import Provider as PortugalAddress

    places = {
        *BRAZILIAN_CITIES,
        *(name for _, name in BrazilAddress.estados),
        *PortugalAddress.cities,
        *BrazilAddress.countries,
    }
    return {
        "first": sorted(first),
        "last": sorted(last),
        "portuguese_first": sorted(portuguese),
        "places": sorted({" ".join(_key(w) for w in place.split()) for place in places}),
    }


@cache
def _name_lists() -> dict[str, frozenset[str]]:
    return {kind: frozenset(names) for kind, names in json.loads(NAME_LISTS.read_text(encoding="utf-8")).items()}


_CAPITALIZED = r"[A-ZÀ-ÖØ-Þ][\wÀ-ÿ'’-]*"
_PROPER_RUN = re.compile(rf"\b{_CAPITALIZED}(?:\s+(?:(?:{'|'.join(_PARTICLES)})\s+)?{_CAPITALIZED})*")
_TITLED = re.compile(rf"(?i:\b({_TITLES}\.?\s+)){_CAPITALIZED}(?:\s+{_CAPITALIZED})*")
_WORD = re.compile(r"[^\W\d_][\w'’-]*")
# a capitalised run of two words or more right after these is someone's ("para Jucelino Bezerra")
_ROLE_CUES = frozenset(
    "para com por cliente motorista tecnico tecnica gerente senhora senhor advogado advogada "
    "fornecedor fornecedora responsavel assinado atendente contato".split()
)


@lru_cache(maxsize=1 << 16)
def _key(word: str) -> str:
    return folded(word).lower().strip("'’-")


def _capitalised_name(match: re.Match) -> str:
    """A run of capitalised words that is not a known place is a name: from its first known first name
    on (a saint's name is a place: "São Paulo"), or whole when it ends in a known surname or comes after
    a word that introduces a person ("para", "cliente", ...) with two words or more. Words before a
    first name stay at the start of a sentence ("Oi Maria" -> "Oi [NOME]"); inside one the run is taken
    whole ("de Nguyen Van Thanh"). Months and days are never names."""
    lists, words = _name_lists(), match.group(0).split()
    keys = [_key(w) for w in words]
    if " ".join(keys) in lists["places"] or any(k in _MONTHS_AND_DAYS for k in keys) or keys[0] in _SAINTS:
        return match.group(0)
    before = match.string[max(0, match.start() - 40) : match.start()].rstrip()  # a window: long texts stay linear
    opens_sentence = not before or before[-1] in ".!?:;\n"
    cue = _key(_WORD.findall(before)[-1]) if _WORD.findall(before) else ""
    named = [k for k in keys if k not in _PARTICLES]
    first = next((i for i, k in enumerate(keys) if k in lists["first"] and not (i and keys[i - 1] in _SAINTS)), None)
    if len(named) >= 2 and (named[-1] in lists["last"] or cue in _ROLE_CUES) or (first and not opens_sentence):
        first = 0
    return match.group(0) if first is None else " ".join(words[:first] + ["[NOME]"])


def _lower_case_names(value: str) -> str:
    """Lower-case names: after a word that introduces a person ("com", "para", "da", ...), a Portuguese
    first name (not a common word such as "rosa") or any first name of five letters or more, with the
    word after it when that is a known surname or first name."""
    lists, words, spans = _name_lists(), list(_WORD.finditer(value)), []
    for i in range(1, len(words)):
        cue, name = words[i - 1], words[i]
        key = _key(name.group())
        if (
            not name.group().islower()
            or _key(cue.group()) not in _PERSON_CUES
            or key in _COMMON_WORDS
            or key in _MONTHS_AND_DAYS
            or not value[cue.end() : name.start()].isspace()
            or not (key in lists["portuguese_first"] or (len(key) >= 5 and key in lists["first"]))
        ):
            continue
        end = name.end()
        if i + 1 < len(words) and words[i + 1].group().islower() and value[end : words[i + 1].start()].isspace():
            after = _key(words[i + 1].group())
            if (
                after not in _PERSON_CUES
                and after not in _PARTICLES
                and (after in lists["last"] or after in lists["first"])
            ):
                end = words[i + 1].end()
        spans.append((name.start(), end))
    for start, end in reversed(spans):
        value = value[:start] + "[NOME]" + value[end:]
    return value


class Redactor:
    def __init__(self, names: list[str] | tuple[str, ...] | None = None, detect_names: bool = False):
        names = sorted({" ".join(n.split()) for n in names or [] if n.strip()}, key=len, reverse=True)
        spelled = (r"\s+".join(_spelled(word) for word in n.split()) for n in names)
        self._names = re.compile(r"(?<!\w)(?:" + "|".join(spelled) + r")(?!\w)", re.IGNORECASE) if names else None
        self.detect_names = detect_names
        if detect_names:  # loaded now, not on the first text: the gate's first decision waited for it
            _name_lists()

    def _detected(self, value: str) -> str:
        value = _TITLED.sub(lambda m: m.group(1) + "[NOME]", value)
        value = _PROPER_RUN.sub(_capitalised_name, value)
        return _lower_case_names(value)

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
        return {
            **record,
            "state": self(record.get("state") or {}),
            **{k: self.text(record[k]) for k in STORED_TEXT_FIELDS if isinstance(record.get(k), str)},
        }


# fields any writer fills with text it chose: a rule that answers with the user's e-mail instead of an
# option puts it there, so they are redacted like the state
STORED_TEXT_FIELDS = ("rule_decision", "mirror_decision", "outcome", "truth", "task_id")


def keyed_state_hash(state: dict, key: bytes) -> str:
    """HMAC-SHA256 of the redacted state: stable for one key, and a guess cannot be confirmed
    against the log without the key."""
    payload = json.dumps(state, sort_keys=True, ensure_ascii=False, default=str).encode()
    return hmac.new(key, payload, hashlib.sha256).hexdigest()
