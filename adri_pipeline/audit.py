"""Evidence audit: is each quoted evidence really in the abstract, and where?

literal     equal up to case, whitespace, quote characters and dash variants
approximate >= 90 % of characters matching in blocks against a window of similar length
            (rapidfuzz partial_ratio), or every piece of an ellipsis-cut quote found in order
absent      neither; also flags quotes copied from the codebook's own examples
waived      empty evidence on a no-information answer

Offsets are [start, end) into the original abstract, never into a cleaned copy.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass

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
        for lowered in ("-" if char in _DASHES else char.lower()):
            chars.append(lowered)
            origin.append(index)
    while chars and chars[-1] == " ":
        chars.pop()
        origin.pop()
    return "".join(chars), origin


def _normalized_quote(quote: str) -> str:
    return normalize(quote)[0].strip(_EDGE_PUNCTUATION)


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
        needle = _normalized_quote(quote)
        if not needle:
            return None
        at = self.normalized.find(needle, begin)
        return None if at < 0 else (at, at + len(needle))


def audit_evidence(
    evidence: str,
    index: TextIndex,
    no_information: bool,
    codebook_examples: str = "",
) -> EvidenceAudit:
    if not evidence or not evidence.strip():
        if no_information:
            return EvidenceAudit("waived", reason="empty evidence on a no-information answer")
        return EvidenceAudit("absent", reason="empty evidence for an informative answer")

    pieces = [p for p in _ELLIPSIS.split(evidence) if _normalized_quote(p)]
    if len(pieces) == 1:
        found = index.find(pieces[0])
        if found:
            return EvidenceAudit("literal", *index.span(*found), score=100.0)
    elif len(pieces) > 1:
        spans, begin = [], 0
        for piece in pieces:
            found = index.find(piece, begin)
            if not found:
                break
            spans.append(found)
            begin = found[1]
        else:
            start, end = index.span(spans[0][0], spans[-1][1])
            return EvidenceAudit("approximate", start, end, score=100.0, reason="ellipsis pieces in order")

    needle = _normalized_quote(" ".join(pieces) if pieces else evidence)
    if needle and index.normalized:
        alignment = fuzz.partial_ratio_alignment(
            needle, index.normalized, score_cutoff=APPROXIMATE_MIN_SCORE
        )
        if alignment is not None:
            start, end = index.span(alignment.dest_start, alignment.dest_end)
            return EvidenceAudit("approximate", start, end, score=round(alignment.score, 1))

    if needle and codebook_examples and needle in normalize(codebook_examples)[0]:
        return EvidenceAudit("absent", reason="quote copied from the codebook's examples, not the abstract")
    return EvidenceAudit("absent", reason="quote not found in the abstract")
