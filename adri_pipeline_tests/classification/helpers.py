"""What the classification tests share, and the tests of the assets, the review site and the service
built on them: a coding round's CSV, synthetic coder files, and a classification run against a
loopback server."""

import csv
from collections.abc import Iterable
from pathlib import Path

from adri_pipeline.classification.backends.embedded import windows
from adri_pipeline.classification.backends.served import ServedBackend
from adri_pipeline.classification.runner import classify_corpus
from adri_pipeline.warehouse import Warehouse

CODER_COLUMNS = ["doc_id", "variable", "value", "evidencia", "note"]  # one coder's file (data/coders/)
ROUND_COLUMNS = ["doc_id", "variable", "value", "evidencia", "coder", "pass", "round"]  # as `adri code pull` writes
BLIND_CODERS = ("a@x.org", "b@x.org")
EVIDENCE = "Foram realizadas entrevistas semiestruturadas com nutricionistas"  # in sample-001's abstract
CODED = 14  # the first 14 sample documents are coded; the other 9 are not

# two coders on four documents' abordagem: they agree on 3, disagree on sample-004 (adjudicated mista)
ROUND = [
    f"sample-001,abordagem,qualitativa,{EVIDENCE},ana@example.org,blind,round-1",
    f"sample-001,abordagem,qualitativa,{EVIDENCE},bruno@example.org,blind,round-1",
    "sample-002,abordagem,quantitativa,,ana@example.org,blind,round-1",
    "sample-002,abordagem,quantitativa,um texto que não está lá,bruno@example.org,blind,round-1",
    "sample-003,abordagem,teorica,,ana@example.org,blind,round-1",
    "sample-003,abordagem,teorica,,bruno@example.org,blind,round-1",
    "sample-004,abordagem,qualitativa,,ana@example.org,blind,round-1",
    "sample-004,abordagem,quantitativa,,bruno@example.org,blind,round-1",
    "sample-004,abordagem,mista,,carla@example.org,adjudication,round-1",
    "sample-001,abordagem,teorica,,ana@example.org,review,round-1",
]


def round_file(tmp_path, lines: list[str]):
    """A round's CSV with these lines (ROUND or a part of it), as `adri code pull` writes one."""
    path = tmp_path / "round-1.csv"
    path.write_text(",".join(ROUND_COLUMNS) + "\n" + "\n".join(lines) + "\n", encoding="utf-8")
    return path


def synthetic_codes(path, codes: Iterable[tuple[str, str, str, str]], round_name: str | None = None) -> Path:
    """A coder file of synthetic codes (nobody read these abstracts), each (doc_id, variable, value,
    evidence): without `round_name`, one coder's file as the project's sample is (data/coders/), noted
    synthetic; with it, that round's file where two blind coders agree on every code. The codes come
    from `keyword_codes` (no model needed) or `model_codes` (the warehouse's answers, some flipped)."""
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        if round_name is None:
            writer.writerow(CODER_COLUMNS)
            writer.writerows([*code, "synthetic"] for code in codes)
        else:
            writer.writerow(ROUND_COLUMNS)
            writer.writerows([*code, coder, "blind", round_name] for code in codes for coder in BLIND_CODERS)
    return Path(path)


def keyword_codes(documents, flip: str | None = None) -> list[tuple[str, str, str, str]]:
    """abordagem by keyword, tecnica entrevista when named, evidence = the first window; `flip` changes
    one document's abordagem (a second version of the file)."""
    codes = []
    for document in documents:
        text = document.abstract.lower()
        first = document.abstract[slice(*windows(document.abstract)[0])]
        abordagem = "quantitativa" if ("questionário" in text or "estat" in text) else "qualitativa"
        if document.doc_id == flip:
            abordagem = "teorica"
        tecnica = "entrevista" if "entrevista" in text else "nao_informado"
        rows = [
            ("abordagem", abordagem, first),
            ("tecnica", tecnica, first if tecnica != "nao_informado" else ""),
            ("recorte", "nacional", first),
            ("brasil_caso", "true", first),
            ("subarea", "saude_coletiva" if "alimenta" in text else "educacao", first),
            ("periodo", "nao_informado", ""),
        ]
        codes += [(document.doc_id, variable, value, evidence) for variable, value, evidence in rows]
    return codes


def model_codes(settings, doc_ids, flip_every: int = 3) -> list[tuple[str, str, str, str]]:
    """The model's answers for these documents, but for every `flip_every`-th document's abordagem
    (`flip_every` 0: the model's answers exactly), without evidence."""
    # one model's answers (the first by name: embedded before ollama), each (document, variable) once,
    # as a coder codes it (a coder file repeating one is refused)
    values = (
        Warehouse(settings.warehouse)
        .query(
            "SELECT doc_id, variable, value FROM classification_values WHERE doc_id IN (SELECT unnest(?)) "
            "QUALIFY row_number() OVER (PARTITION BY doc_id, variable ORDER BY model, codebook_hash) = 1 "
            "ORDER BY doc_id, variable",
            [list(doc_ids)],
        )
        .rows()
    )
    codes = []
    for doc_id, variable, value in values:
        if flip_every and variable == "abordagem" and sorted(doc_ids).index(doc_id) % flip_every == 0:
            value = "quantitativa" if value != "quantitativa" else "qualitativa"
        codes.append((doc_id, variable, value, ""))
    return codes


def host(stub, provider: str = "ollama") -> str:
    return stub.host + ("/v1" if provider == "openai" else "")


def backend_for(stub, provider: str = "ollama", **kwargs):
    kwargs = {"backoff_s": 0.01, **kwargs}
    return ServedBackend(provider, "qwen-test", [host(stub, provider)], **kwargs)


def run(stub, corpus, codebook, warehouse, provider: str = "ollama", **kwargs):
    """The per-document loop over the corpus against the loopback server, speaking `provider`'s API."""
    return classify_corpus(corpus.documents, codebook, backend_for(stub, provider), warehouse, **kwargs)
