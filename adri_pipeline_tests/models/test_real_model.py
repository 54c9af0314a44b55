"""Every LLM path against a real generative model: llama.cpp's llama-server with Gemma 3 270M
(`make llm`), on loopback. Slow: `make test-slow` and .ci/run run it.

Requests are counted by a loopback proxy in front of the server, so "no document paid twice" is
what the server received, not what the client believes it sent."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import duckdb
import httpx
import pytest

from adri_pipeline.config import SHARED_DATA
from adri_pipeline_tests.conftest import PILOT, shared

pytestmark = pytest.mark.slow

llama_server = pytest.importorskip("adri_pipeline.models.llama_server")


class CountingProxy:
    """Forwards to the real server and records each chat request's document title."""

    def __init__(self, upstream: str):
        self.asked: list[str] = []
        self.lock = threading.Lock()
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def _forward(self, method: str):
                body = self.rfile.read(int(self.headers.get("Content-Length", 0))) if method == "POST" else None
                title = None
                if self.path.endswith("/chat/completions"):
                    user = [m for m in json.loads(body)["messages"] if m["role"] == "user"][0]["content"]
                    title = user.split("\n", 1)[0]
                    with proxy.lock:
                        proxy.asked.append(title)
                try:
                    response = httpx.request(
                        method,
                        upstream + self.path,
                        content=body,
                        timeout=600,
                        headers={"Content-Type": "application/json"},
                    )
                except httpx.HTTPError:
                    self.close_connection = True
                    return
                self.send_response(response.status_code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(response.content)))
                self.end_headers()
                self.wfile.write(response.content)

            def do_GET(self):
                self._forward("GET")

            def do_POST(self):
                try:
                    self._forward("POST")
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client was killed mid-request

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def settled(self, in_flight: int) -> int:
        """Documents the client has finished with: it keeps `in_flight` documents at the model and
        starts the next only after committing the one that finished, so each title asked beyond the
        first `in_flight` means one more document settled (committed, when its answer follows the
        codebook). An answer the proxy has seen may not have reached the client yet."""
        with self.lock:
            return max(0, len(set(self.asked)) - in_flight)

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture(scope="module")
def gemma(llama_on_loopback):
    proxy = CountingProxy(llama_on_loopback[0])
    yield proxy
    proxy.close()


@pytest.fixture(scope="module")
def real_abstracts(tmp_path_factory) -> Path:
    """The first 10 OpenAlex abstracts that are not reserved for independent evaluation."""
    source = shared("corpus/openalex_direito_alimentacao.jsonl")
    reserved = set((SHARED_DATA / "corpus" / "holdout_ids.txt").read_text().split())
    rows = [json.loads(line) for line in source.read_text(encoding="utf-8").splitlines() if line.strip()]
    chosen = [r for r in rows if r["id"] not in reserved and r.get("abstract")][:10]
    path = tmp_path_factory.mktemp("real") / "ten.jsonl"
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in chosen), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def two_variables(tmp_path_factory) -> Path:
    """The pilot codebook cut to two variables: the 270M model writes ~1,400 tokens for all six (each
    quote padded to the schema's 200 characters) and every answer is retried, so the whole codebook
    would take half an hour here; benchmarks/real_model.py measures the whole codebook."""
    import yaml

    codebook = yaml.safe_load(PILOT.read_text(encoding="utf-8"))
    codebook["variables"] = {k: codebook["variables"][k] for k in ("abordagem", "brasil_caso")}
    path = tmp_path_factory.mktemp("codebook") / "two_variables.yaml"
    path.write_text(yaml.safe_dump(codebook, allow_unicode=True, sort_keys=False), encoding="utf-8")
    return path


CONCURRENCY = 2


def classify(proxy: CountingProxy, corpus: Path, warehouse: Path, codebook: Path) -> subprocess.Popen:
    env = {**os.environ, "OPENAI_BASE_URL": proxy.url + "/v1", "ADRI_RESULTS_EVERY_DOCUMENTS": "1"}
    for name in ("ADRI_OPENAI_HOSTS", "ADRI_FAULT"):
        env.pop(name, None)
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "adri_pipeline.cli",
            "classify",
            "--backend",
            "openai",
            "--model",
            llama_server.ALIAS,
            "--corpus",
            str(corpus),
            "--codebook",
            str(codebook),
            "--warehouse",
            str(warehouse),
            "--concurrency",
            str(CONCURRENCY),
        ],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def stored(warehouse: Path) -> dict[str, dict]:
    with duckdb.connect(str(warehouse), read_only=True) as con:
        rows = con.execute(
            "SELECT d.title, l.response, l.audit FROM ledger l JOIN documents d USING (doc_id)"
        ).fetchall()
    return {title: {"response": json.loads(response), "audit": json.loads(audit)} for title, response, audit in rows}


def test_classification_with_a_real_model_survives_kill_9_and_pays_no_document_twice(
    gemma, real_abstracts, two_variables, tmp_path
):
    from jsonschema import Draft202012Validator

    from adri_pipeline.classification.codebook import load_codebook
    from adri_pipeline.classification.prompt import build_prompt
    from adri_pipeline.classification.runner import PREFETCH

    warehouse = tmp_path / "wh" / "adri.duckdb"
    first = classify(gemma, real_abstracts, warehouse, two_variables)
    deadline = time.monotonic() + 1200
    # killed once two documents are settled, not at a count of answers: the third answer the proxy saw
    # had not always reached the client, so the kill landed before any commit (CI, 2026-12-03)
    while gemma.settled(in_flight=CONCURRENCY * PREFETCH) < 2 and first.poll() is None:
        assert time.monotonic() < deadline, "the real model settled fewer than two documents in 20 minutes"
        time.sleep(0.2)
    first.send_signal(signal.SIGKILL)
    first.wait()
    before_kill = {f"Título: {title}" for title in stored(warehouse)}
    assert before_kill, "nothing was committed before the kill"
    asked_before = len(gemma.asked)

    second = classify(gemma, real_abstracts, warehouse, two_variables)
    out, err = second.communicate(timeout=1800)
    assert second.returncode == 0, err
    asked_on_resume = set(gemma.asked[asked_before:])
    assert not asked_on_resume & before_kill  # a document committed before the kill is never asked again

    answers = stored(warehouse)
    schema = Draft202012Validator(build_prompt(load_codebook(two_variables)).schema)
    variables = set(load_codebook(two_variables).variables)
    for title, answer in answers.items():
        assert not list(schema.iter_errors(answer["response"])), title  # every stored answer follows the codebook
        assert set(answer["audit"]) == variables  # and every variable's evidence was audited
        assert {a["status"] for a in answer["audit"].values()} <= {"literal", "approximate", "absent", "waived"}

    asked = len(gemma.asked)
    third = classify(gemma, real_abstracts, warehouse, two_variables)
    out, err = third.communicate(timeout=1800)
    assert third.returncode == 0, err
    failed = 10 - len(answers)  # a document with no answer that follows the codebook is asked again, by design
    assert len(gemma.asked) - asked <= 2 * failed
    if not failed:
        assert len(gemma.asked) == asked  # everything answered: the rerun makes no request
