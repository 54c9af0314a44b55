"""Documents from JSONL, CSV and OpenAlex/CAPES-style exports into one polars frame.

The original title and abstract are kept byte for byte (evidence offsets point into them); the
model reads a cleaned copy: HTML entities decoded, control characters, ANSI escapes and bidi
overrides removed, a leading "Resumo" label dropped, whitespace collapsed, and an abstract longer
than `max_text_chars` cut at a word boundary with a note (the model's context is finite). Bad rows
raise a CorpusError naming file and line, or are reported as skips - never dropped silently.
"""

from __future__ import annotations

import csv
import hashlib
import html
import io
import itertools
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Iterator

import polars as pl

from adri_pipeline.config import DEFAULT_MAX_TEXT_CHARS, Settings
from adri_pipeline.errors import AdriError
from adri_pipeline.warehouse.corpus import DOCUMENT_SCHEMA

SUPPORTED_SUFFIXES = (".jsonl", ".csv", ".xlsx")

_ALIASES = {
    "doc_id": ("doc_id", "id"),
    "title": ("title", "titulo", "display_name"),
    "abstract": ("abstract", "resumo"),
    "year": ("publication_year", "year", "ano"),
    "doi": ("doi",),
    "language": ("language", "idioma"),
    "url": ("url", "link", "link_trabalho"),
}
_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b[@-Z\\-_]")
_INVISIBLE = re.compile("[\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff]")
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_INVISIBLE_OR_CONTROL = re.compile(_INVISIBLE.pattern[:-1] + _CONTROL.pattern[1:])
TRUNCATION_MARK = " […]"
_LEADING_LABEL = re.compile(r"^\s*(resumo|abstract|resumen)\s*[:.\-–—]?\s+(?=\S)", re.IGNORECASE)


class CorpusError(AdriError, ValueError):
    """A corpus file or row that cannot be read; the message names file and line."""


@dataclass(frozen=True)
class Document:
    """What the model reads and what the audit searches: offsets point into title and abstract."""

    doc_id: str
    title: str  # original: evidence offsets point here
    abstract: str  # original: evidence offsets point here
    text: str  # cleaned abstract: what the model reads

    @property
    def title_text(self) -> str:
        """The cleaned title: what the model reads."""
        return clean_text(self.title)


def as_documents(frame: pl.DataFrame) -> list[Document]:
    return [
        Document(r["doc_id"], r["title"] or "", r["abstract"], r["text"])
        for r in frame.select("doc_id", "title", "abstract", "text").iter_rows(named=True)
    ]


@dataclass
class Corpus:
    documents: pl.DataFrame
    coverage: pl.DataFrame
    skipped: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # e.g. abstracts cut for the model's context


def body_start(abstract: str) -> int:
    """Offset where the abstract proper begins, after a leading 'Resumo' label."""
    label = _LEADING_LABEL.match(abstract)
    return label.end() if label else 0


def clean_text(text: str) -> str:
    """What a model should read of a field: entities decoded, no control, escape or bidi characters,
    single spaces. The original stays untouched for the offsets."""
    text = html.unescape(_ANSI.sub("", text or ""))
    if _INVISIBLE_OR_CONTROL.search(text):  # rare: one search instead of two substitutions per text
        text = _CONTROL.sub(" ", _INVISIBLE.sub("", text))
    return " ".join(text.split())  # = re.sub(r"\s+", " ", text).strip(): the same whitespace, 5x faster


def clean_abstract(abstract: str, max_chars: int | None = None) -> str:
    """clean_text() without a leading 'Resumo' label, cut at a word boundary past `max_chars`."""
    text = clean_text(_LEADING_LABEL.sub("", abstract, count=1))
    if max_chars and len(text) > max_chars:
        cut = text.rfind(" ", 0, max_chars)
        text = text[: cut if cut > max_chars // 2 else max_chars] + TRUNCATION_MARK
    return text


def _decode(raw: bytes, path: Path) -> str:
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        raise CorpusError(f"{path}: line {line}: bytes are not UTF-8 ({exc.reason})") from None


def _jsonl_rows(path: Path) -> Iterator[tuple[int, dict]]:
    """A JSON Lines file one line at a time (a large corpus is never held whole as bytes, text and
    lines at once); lines end at '\\n' only, as JSON Lines says, so U+2028 inside a string stays."""
    with path.open("rb") as stream:
        for number, raw in enumerate(stream, start=1):
            try:
                text = raw.decode("utf-8-sig" if number == 1 else "utf-8")
            except UnicodeDecodeError as exc:
                raise CorpusError(f"{path}: line {number}: bytes are not UTF-8 ({exc.reason})") from None
            if not text.strip():
                continue
            try:
                record = json.loads(text)
            except json.JSONDecodeError as exc:
                raise CorpusError(f"{path}: line {number}: not valid JSON ({exc.msg})") from None
            if not isinstance(record, dict):
                raise CorpusError(f"{path}: line {number}: expected a JSON object")
            yield number, record


def _read_rows(path: Path) -> Iterable[tuple[int, dict]]:
    """(line number, raw row) pairs; line numbers count from 1 as an editor shows them."""
    suffix = path.suffix.lower()
    if suffix == ".jsonl":
        return _jsonl_rows(path)
    if suffix == ".csv":
        text = _decode(path.read_bytes(), path)
        reader = csv.DictReader(io.StringIO(text, newline=""), delimiter=_separator(text))
        rows = []
        start = 2
        for record in reader:
            rows.append((start, record))
            start = reader.line_num + 1
        return rows
    if suffix == ".xlsx":
        try:
            frame = pl.read_excel(path, infer_schema_length=0)
        except Exception as exc:  # fastexcel raises its own types for broken workbooks
            raise CorpusError(f"{path}: not a readable xlsx workbook ({type(exc).__name__}: {exc})") from None
        return [(index + 2, record) for index, record in enumerate(frame.iter_rows(named=True))]
    raise CorpusError(f"{path}: unsupported format (expected one of {', '.join(SUPPORTED_SUFFIXES)})")


def _separator(text: str) -> str:
    """The CSV separator, sniffed from the header line (exports from Excel in pt-BR use ';')."""
    header = text.split("\n", 1)[0]
    counts = {sep: header.count(sep) for sep in (",", ";", "\t")}
    best = max(counts, key=counts.get)
    return best if counts[best] else ","


def _columns(keys, languages: tuple[str, ...]) -> dict[str, str]:
    lowered = {k.lower().strip(): k for k in keys if k}
    found = {}
    for name, aliases in _ALIASES.items():
        for alias in aliases:
            if alias in lowered:
                found[name] = lowered[alias]
                break
    for name in ("title", "abstract"):
        for language in languages:
            for alias in _ALIASES[name]:
                key = f"{alias}_{language}"
                if key in lowered:
                    found[f"{name}_{language}"] = lowered[key]
    return found


def _text(value) -> str:
    return "" if value is None else str(value).strip()


def _field(record: dict, cols: dict, name: str) -> str:
    return _text(record.get(cols[name])) if name in cols else ""


def _doc_id(record: dict, cols: dict, path: Path, line: int) -> str:
    if "doc_id" in cols:
        value = _text(record.get(cols["doc_id"]))
        if not value:
            raise CorpusError(f"{path}: line {line}: missing document id (column {cols['doc_id']!r})")
        return value.rsplit("/", 1)[-1] if value.startswith("https://openalex.org/") else value
    url = _field(record, cols, "url")
    if url:
        prefix = "capes-" if "capes.gov.br" in url else "url-"
        return prefix + hashlib.sha1(url.encode("utf-8")).hexdigest()[:12]
    doi = _field(record, cols, "doi")
    if doi:
        return "doi:" + doi.removeprefix("https://doi.org/")
    raise CorpusError(f"{path}: line {line}: missing document id (no id, url or doi column value)")


def normalized_doi(value: str) -> str:
    """A DOI as it names a paper: without its resolver prefix, in lower case (DOIs ignore case)."""
    value = value.strip()
    for prefix in ("https://doi.org/", "http://doi.org/", "https://dx.doi.org/", "http://dx.doi.org/", "doi:"):
        if value.lower().startswith(prefix):
            value = value[len(prefix) :]
    return value.lower()


def _pick(record: dict, cols: dict, name: str, display: str, analysis: str) -> tuple[str, str]:
    """Display-language text first, then the analysis language, then the unsuffixed column."""
    for language in (display, analysis):
        column = cols.get(f"{name}_{language}")
        if column and _text(record.get(column)):
            return _text(record.get(column)), language
    column = cols.get(name)
    return (_text(record.get(column)) if column else ""), ""


CHUNK_ROWS = 4096
READER_VERSION = "2"  # change it when loading gives other documents from the same bytes


def corpus_paths(path: str | Path) -> list[Path]:
    """The files a corpus path stands for: itself, or a folder's supported files in name order."""
    path = Path(path)
    if path.is_dir():
        files = sorted(p for p in path.iterdir() if p.suffix.lower() in SUPPORTED_SUFFIXES)
        if not files:
            raise CorpusError(f"{path}: no {', '.join(SUPPORTED_SUFFIXES)} files in folder")
        return files
    if path.exists():
        return [path]
    raise CorpusError(f"{path}: corpus file not found")


def fingerprints(files: list[Path], options: list) -> pl.DataFrame:
    """(source, size, sha256, options) of each file: equal fingerprints, equal documents."""
    rows = []
    for file in files:
        digest = hashlib.sha256()
        with file.open("rb") as stream:
            while chunk := stream.read(1 << 22):
                digest.update(chunk)
        rows.append(
            {
                "source": str(file),
                "size": file.stat().st_size,
                "sha256": digest.hexdigest(),
                "options": json.dumps([READER_VERSION, *options]),
            }
        )
    return pl.DataFrame(rows, schema={"source": pl.String, "size": pl.Int64, "sha256": pl.String, "options": pl.String})


class _Rows:
    """The documents read so far, as columns, moved into a DataFrame every CHUNK_ROWS rows (Python
    holds one chunk's strings at a time); `on_chunk(frame)` is given each chunk as it is made."""

    def __init__(self, on_chunk):
        self.on_chunk = on_chunk
        self.columns: dict[str, list] = {name: [] for name in DOCUMENT_SCHEMA}
        self.chunks: list[pl.DataFrame] = []

    def add(self, **values) -> None:
        for name, value in values.items():
            self.columns[name].append(value)
        if len(self.columns["doc_id"]) == CHUNK_ROWS:
            self._cut()

    def _cut(self) -> None:
        self.chunks.append(pl.DataFrame(self.columns, schema=DOCUMENT_SCHEMA))
        self.columns = {name: [] for name in DOCUMENT_SCHEMA}
        if self.on_chunk is not None and self.chunks[-1].height:
            self.on_chunk(self.chunks[-1])

    def frame(self) -> pl.DataFrame:
        self._cut()
        return pl.concat(self.chunks, rechunk=True)


class _Seen:
    """Which papers were read, by id and by DOI: the same paper twice with the same text is a reported
    skip, with another text an error naming both lines."""

    def __init__(self):
        self.by_id: dict[str, tuple[str, int, bytes]] = {}  # doc_id -> (file, line, digest of title and abstract)
        self.by_doi: dict[str, str] = {}  # normalized DOI -> the doc_id its paper was stored under

    def duplicate(self, file: Path, line: int, doc_id: str, doi: str, digest: bytes) -> str | None:
        """Why this row is a duplicate to skip (None: it is new); raises when it clashes."""
        same_doi = self.by_doi.get(doi) if doi else None
        if same_doi is not None and same_doi != doc_id:
            known = self.by_id[same_doi]
            where = f"{known[0]} line {known[1]}"
            if known[2] != digest:
                raise CorpusError(
                    f"{file}: line {line}: DOI {doi!r} is also document {same_doi!r} ({where}), "
                    "with a different text: one paper, two texts; keep one of the rows"
                )
            return f"{file}: line {line}: duplicate of {same_doi!r} by DOI {doi!r} ({where}), same text, skipped"
        previous = self.by_id.get(doc_id)
        if previous is not None:
            where = f"{previous[0]} line {previous[1]}"
            if previous[2] != digest:
                raise CorpusError(f"{file}: line {line}: document id {doc_id!r} repeats {where} with a different text")
            return f"{file}: line {line}: duplicate of {doc_id!r} ({where}), same text, skipped"
        return None

    def add(self, file: Path, line: int, doc_id: str, doi: str, digest: bytes) -> None:
        self.by_id[doc_id] = (str(file), line, digest)
        if doi:
            self.by_doi[doi] = doc_id


def _first_row(file: Path, languages: tuple[str, str]):
    """The file's rows, after checking its header names an abstract column."""
    rows = iter(_read_rows(file))
    first = next(rows, None)
    if first is not None and not any(
        k == "abstract" or k.startswith("abstract_") for k in _columns(first[1].keys(), languages)
    ):
        found = ", ".join(repr(k) for k in list(first[1].keys())[:12])
        raise CorpusError(
            f"{file}: no abstract column (looked for {', '.join(_ALIASES['abstract'])}; "
            f"the header has {found}). For CSV, the separator is read from the header "
            "line (',', ';' or tab); check the first line is the header"
        )
    return itertools.chain([first] if first else [], rows)


def load_corpus(
    path: str | Path,
    display_language: str = "pt",
    analysis_language: str = "en",
    max_text_chars: int | None = DEFAULT_MAX_TEXT_CHARS,
    on_chunk=None,
) -> Corpus:
    """Load one file or every supported file in a folder. `on_chunk(frame)` is given each CHUNK_ROWS
    documents as soon as they are read (a run starts on the first while the rest is read); a bad line
    further on still raises here, after them."""
    path = Path(path)
    reading = _Reading(display_language, analysis_language, max_text_chars, _Rows(on_chunk))
    coverage = [reading.file(file) for file in corpus_paths(path)]
    if not reading.seen.by_id:
        rows_read = sum(c["rows"] for c in coverage)
        raise CorpusError(f"{path}: no document with an abstract to classify ({rows_read} rows read)")
    return Corpus(reading.rows.frame(), pl.DataFrame(coverage), reading.skipped, reading.notes)


@dataclass
class _Reading:
    """What reading a corpus gathers across its files: the documents kept, what identifies each (so a
    duplicate in a later file is caught), the duplicates skipped and the notes for the reader."""

    display_language: str
    analysis_language: str
    max_text_chars: int | None
    rows: _Rows
    seen: _Seen = field(default_factory=_Seen)
    skipped: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def file(self, file: Path) -> dict:
        """One file read: its rows counted as included, without an abstract, or duplicates."""
        counts = {"source": str(file), "rows": 0, "included": 0, "excluded_no_abstract": 0, "skipped_duplicate": 0}
        for line, record in _first_row(file, (self.display_language, self.analysis_language)):
            counts["rows"] += 1
            counts[self._record(file, line, record)] += 1
        return counts

    def _record(self, file: Path, line: int, record: dict) -> str:
        """One row kept or not; the count it goes to."""
        languages = (self.display_language, self.analysis_language)
        cols_here = _columns(record.keys(), languages)  # JSON lines may differ in keys
        doc_id = _doc_id(record, cols_here, file, line)
        abstract, abstract_lang = _pick(record, cols_here, "abstract", *languages)
        title, _ = _pick(record, cols_here, "title", *languages)
        if not abstract:
            return "excluded_no_abstract"
        digest = hashlib.blake2b(f"{title}\x00{abstract}".encode(), digest_size=16).digest()
        # the same paper under another id (a row without an id falls back to its DOI) is the same paper
        doi = normalized_doi(_field(record, cols_here, "doi"))
        why = self.seen.duplicate(file, line, doc_id, doi, digest)
        if why is not None:
            self.skipped.append(why)
            return "skipped_duplicate"
        text = clean_abstract(abstract, self.max_text_chars)
        if text.endswith(TRUNCATION_MARK):
            self.notes.append(
                f"{file}: line {line}: abstract of {len(abstract):,} characters cut to "
                f"{self.max_text_chars:,} for the model (ADRI_MAX_TEXT_CHARS); evidence is still "
                "audited against the whole text"
            )
        self.seen.add(file, line, doc_id, doi, digest)
        self.rows.add(
            doc_id=doc_id,
            title=title,
            abstract=abstract,
            text=text,
            text_language=abstract_lang or _field(record, cols_here, "language") or self.display_language,
            year=self._year(file, line, _field(record, cols_here, "year")),
            doi=_field(record, cols_here, "doi"),
            source=str(file),
            line=line,
        )
        return "included"

    def _year(self, file: Path, line: int, given: str) -> int | None:
        """The publication year as a number (analysts compare and group years in SQL); a value that
        is not a year is kept out with a note naming its file and line, never guessed."""
        match = YEAR.fullmatch(given)
        if given and match is None:
            self.notes.append(f"{file}: line {line}: year {given!r} is not a year; stored as unknown")
        return int(match.group(1)) if match else None


YEAR = re.compile(r"(\d{4})(?:\.0|-\d{2}(?:-\d{2})?)?")  # 2019, 2019.0 (a spreadsheet's), 2019-05-01


def reading_options(settings: "Settings") -> list:
    return [settings.display_language, settings.analysis_language, settings.max_text_chars]


def read_corpus(settings: "Settings", path: str | Path | None = None, on_chunk=None) -> Corpus:
    """A corpus file or folder (the configured one by default) read with the settings' languages and
    text limit, as every caller reads it."""
    return load_corpus(path or settings.corpus, *reading_options(settings), on_chunk=on_chunk)
