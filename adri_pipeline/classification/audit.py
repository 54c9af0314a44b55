"""Evidence audit: is each quoted evidence really in what the model read (title and abstract), and where?

literal     equal up to case, whitespace, quote characters and dash variants
approximate >= 90 % of characters matching in blocks against a window of similar length
            (rapidfuzz partial_ratio), or every piece of an ellipsis-cut quote found in order
absent      neither; also flags quotes copied from the codebook's own examples
waived      empty evidence on a no-information answer

Offsets are [start, end) into the original field the quote was found in (`field`: "title" or
"abstract"), never into a cleaned copy. The abstract is searched first, then the title: ADR 0011,
"O texto classificado é o que o painel mostra: o título e o resumo".
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, replace

from rapidfuzz import fuzz

APPROXIMATE_MIN_SCORE = 90.0

_QUOTES = set("\"'`´“”„‟«»‹›‘’‚‛′″‖")
_DASHES = set("-‐‑‒–—―−")
_ELLIPSIS = re.compile(r"\s*(?:\.\.\.+|…|\[\s*(?:\.\.\.|…)\s*\]|\(\s*(?:\.\.\.|…)\s*\))\s*")
_EDGE_PUNCTUATION = " \t\n.,;:"


@dataclass(frozen=True)
class EvidenceAudit:
    status: str
    start: int | None = None
    end: int | None = None
    score: float = 0.0
    reason: str = ""
    field: str | None = None  # "title" | "abstract" when found

    def as_dict(self) -> dict:
        return asdict(self)


def normalize(text: str) -> tuple[str, list[int]]:
    """Lowercased text without quote characters, one '-' per dash, single spaces, plus the index map
    from each normalized character back to the original text."""
    chars: list[str] = []
    origin: list[int] = []
    for index, char in enumerate(text):
        if char in _QUOTES:
            continue
        if char.isspace():
            if chars and chars[-1] != " ":
                chars.append(" ")
                origin.append(index)
            continue
        for lowered in "-" if char in _DASHES else char.lower():
            chars.append(lowered)
            origin.append(index)
    while chars and chars[-1] == " ":
        chars.pop()
        origin.pop()
    return "".join(chars), origin


_QUOTE_TABLE = str.maketrans({**{q: None for q in _QUOTES}, **{d: "-" for d in _DASHES}})


def _normalized_quote(quote: str) -> str:
    """normalize() without the offset map (quotes need none): the same text, in C loops."""
    lowered = "".join(map(str.lower, quote.translate(_QUOTE_TABLE)))
    return " ".join(lowered.split()).strip(_EDGE_PUNCTUATION)


def _trimmed(text: str, start: int, end: int) -> tuple[int, int]:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


class TextIndex:
    """The normalized abstract, built once per document and reused for every variable."""

    def __init__(self, text: str):
        self.text = text
        self.normalized, self.origin = normalize(text)

    def span(self, start: int, end: int) -> tuple[int, int]:
        """Original-text offsets of a normalized [start, end), without edge whitespace."""
        return _trimmed(self.text, self.origin[start], self.origin[end - 1] + 1)

    def find(self, quote: str, begin: int = 0) -> tuple[int, int] | None:
        """Normalized [start, end) of the quote at or after `begin`, or None."""
        return self.find_normalized(_normalized_quote(quote), begin)

    def find_normalized(self, needle: str, begin: int = 0) -> tuple[int, int] | None:
        if not needle:
            return None
        at = self.normalized.find(needle, begin)
        return None if at < 0 else (at, at + len(needle))


class DocumentIndex:
    """Every field the model read, each indexed once per document."""

    def __init__(self, abstract: str, title: str = ""):
        self.fields = {"abstract": TextIndex(abstract), "title": TextIndex(title or "")}


def _exact(needles: list[str], index: TextIndex) -> EvidenceAudit | None:
    """Normalized pieces found as they are: one -> literal, several in order -> approximate."""
    if len(needles) == 1:
        found = index.find_normalized(needles[0])
        return EvidenceAudit("literal", *index.span(*found), score=100.0) if found else None
    spans, begin = [], 0
    for needle in needles:
        found = index.find_normalized(needle, begin)
        if not found:
            return None
        spans.append(found)
        begin = found[1]
    start, end = index.span(spans[0][0], spans[-1][1])
    return EvidenceAudit("approximate", start, end, score=100.0, reason="ellipsis pieces in order")


def _fuzzy(needle: str, index: TextIndex) -> EvidenceAudit | None:
    if not (needle and index.normalized):
        return None
    alignment = fuzz.partial_ratio_alignment(needle, index.normalized, score_cutoff=APPROXIMATE_MIN_SCORE)
    if alignment is None:
        return None
    start, end = index.span(alignment.dest_start, alignment.dest_end)
    return EvidenceAudit("approximate", start, end, score=round(alignment.score, 1))


def audit_evidence(
    evidence: str,
    index: DocumentIndex | TextIndex,
    no_information: bool,
    codebook_examples: str = "",
) -> EvidenceAudit:
    if not evidence or not evidence.strip():
        if no_information:
            return EvidenceAudit("waived", reason="empty evidence on a no-information answer")
        return EvidenceAudit("absent", reason="empty evidence for an informative answer")
    fields = index.fields if isinstance(index, DocumentIndex) else {"abstract": index}

    needles = [n for n in map(_normalized_quote, _ELLIPSIS.split(evidence)) if n]
    if needles:
        for name, text_index in fields.items():
            found = _exact(needles, text_index)
            if found:
                return replace(found, field=name)

    needle = " ".join(needles) if needles else _normalized_quote(evidence)
    candidates = [
        (found, name) for name, text_index in fields.items() if (found := _fuzzy(needle, text_index)) is not None
    ]
    if candidates:
        best, name = max(candidates, key=lambda c: c[0].score)  # max() keeps the abstract on a tie
        return replace(best, field=name)

    if needle and codebook_examples and needle in normalize(codebook_examples)[0]:
        return EvidenceAudit("absent", reason="quote copied from the codebook's examples, not the text")
    return EvidenceAudit("absent", reason="quote not found in the title or abstract")
