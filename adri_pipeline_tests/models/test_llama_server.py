import subprocess
import sys

import pytest

from adri_pipeline.models.llama_server import LlamaServerMissing, wait_until_ready


def test_a_server_built_for_another_cpu_is_named_as_such():
    """Failed before: CI's llama-server, built for one CPU and reused from a shared cache on another,
    died with SIGILL and the error said only "exited with code -4"."""
    dies = subprocess.Popen([sys.executable, "-c", "import os, signal; os.kill(os.getpid(), signal.SIGILL)"])
    dies.wait()
    with pytest.raises(LlamaServerMissing, match=r"SIGILL .*built for another CPU.*make llm"):
        wait_until_ready("http://127.0.0.1:9/v1", dies, timeout_s=5)
