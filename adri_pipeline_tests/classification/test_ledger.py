"""Cache keys change with everything that can change an answer, and with nothing else."""

from hypothesis import given, settings
from hypothesis import strategies as st

from adri_pipeline.classification.codebook import load_codebook
from adri_pipeline.classification.corpus import Document
from adri_pipeline.classification.ledger import Ledger, cache_key
from adri_pipeline.classification.prompt import build_prompt
from adri_pipeline_tests.conftest import PILOT

DOC = Document("d1", "Um título", "Resumo original", "Resumo limpo")


def test_the_key_follows_text_signature_model_digest_and_params(pilot):
    prompt = build_prompt(pilot)
    base = cache_key(DOC, prompt, "ollama:m", "sha256:a", {"t": 0.0})
    assert base == cache_key(DOC, prompt, "ollama:m", "sha256:a", {"t": 0.0})
    variants = [
        cache_key(
            Document("d1", "Outro título", "Resumo original", "Resumo limpo"),
            prompt,
            "ollama:m",
            "sha256:a",
            {"t": 0.0},
        ),
        cache_key(
            Document("d1", "Um título", "Resumo original", "Outro resumo"), prompt, "ollama:m", "sha256:a", {"t": 0.0}
        ),
        cache_key(DOC, prompt, "ollama:other", "sha256:a", {"t": 0.0}),
        cache_key(DOC, prompt, "ollama:m", "sha256:b", {"t": 0.0}),
        cache_key(DOC, prompt, "ollama:m", "sha256:a", {"t": 0.5}),
    ]
    assert base not in variants and len(set(variants)) == len(variants)


def test_the_document_id_and_the_original_abstract_are_not_in_the_key(pilot):
    prompt = build_prompt(pilot)
    moved = Document("another-id", "Um título", "Resumo  original (raw)", "Resumo limpo")
    assert cache_key(moved, prompt, "m", "d", {}) == cache_key(DOC, prompt, "m", "d", {})


def test_the_ledger_commits_each_record_and_finds_it_by_key(warehouse):
    record = {
        "cache_key": "k1",
        "doc_id": "d1",
        "model": "m",
        "model_digest": "d",
        "backend": "b",
        "signature": "s",
        "prompt_version": "v",
        "params": "{}",
        "response": "{}",
        "audit": "{}",
        "attempts": 1,
        "valid_first_try": True,
        "json_valid_first_try": True,
        "seconds": 0.1,
        "prompt_tokens": 1,
        "completion_tokens": 2,
    }
    ledger = Ledger(warehouse)
    with ledger.writer() as commit:
        commit(record)
    assert ledger.known(["k1", "k2"]) == {"k1"} and ledger.known([]) == set()
    assert ledger.rows(["k1"])[0][:4] == ("k1", "{}", "{}", 1)


@settings(max_examples=200, deadline=None)
@given(
    title=st.text(max_size=30),
    text=st.text(max_size=60),
    params=st.dictionaries(st.text(max_size=5), st.floats(allow_nan=False) | st.text(max_size=5), max_size=3),
)
def test_document_keys_are_cache_keys_byte_for_byte(title, text, params):
    """document_keys serializes the shared part once for speed; a different byte would be a cache
    miss for every stored answer."""
    from types import SimpleNamespace

    from adri_pipeline.classification.ledger import document_keys

    prompt = build_prompt(load_codebook(PILOT))
    backend = SimpleNamespace(model="ollama:m", digest="sha256:a", params=params)
    document = Document("d1", title, text, text)
    assert document_keys([document], prompt, backend) == [cache_key(document, prompt, "ollama:m", "sha256:a", params)]
