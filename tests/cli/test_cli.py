"""The `so-middleware` command, run for real in a subprocess: extract (the main job), chat, serve,
and its errors (one line each: the cause and what to do; `--debug` adds the traceback)."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import get_args, get_origin

import pytest
import tomllib

ROOT = Path(__file__).resolve().parent.parent.parent
SCRIPT = Path(sys.executable).parent / "so-middleware"
ERROR_LINE = re.compile(r"^(\[so-middleware\] error: |so-middleware( \w+)?: error: )")


def cli(
    *args: str,
    stdin: str | None = None,
    env: dict[str, str] | None = None,
    cwd: Path = ROOT,
    command: tuple[str, ...] = (sys.executable, "-m", "so_middleware.cli"),
) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENAI_BASE_URL")}
    return subprocess.run(
        [*command, *args], input=stdin, capture_output=True, text=True, cwd=cwd, env={**base, **(env or {})},
        timeout=240,
    )  # fmt: skip


def assert_one_line_failure(result: subprocess.CompletedProcess[str], message: str) -> str:
    """A failure: non-zero exit, no traceback, exactly one error line, holding `message`."""
    assert result.returncode != 0, result.stderr
    assert "Traceback" not in result.stderr, result.stderr
    lines = [line for line in result.stderr.splitlines() if ERROR_LINE.match(line)]
    assert len(lines) == 1, result.stderr
    assert message in lines[0], lines[0]
    return lines[0]


def wait_for_line(process: subprocess.Popen[str], fragment: str, timeout: float = 120) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = process.stderr.readline()  # type: ignore[union-attr]
        if fragment in line:
            return line
        if not line and process.poll() is not None:
            break
    pytest.fail(f"no line with {fragment!r}")


def pid_alive(pid: int) -> bool:
    status = Path(f"/proc/{pid}/status")
    try:
        return "zombie" not in status.read_text()
    except FileNotFoundError:
        return False


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
def test_extract_prints_validated_json(stream: bool) -> None:
    args = ["extract", "--type", "examples/people.py:Person", "--text", "John Smith is a 35-year-old engineer."]
    result = cli(*args, *(["--stream"] if stream else []))
    assert result.returncode == 0, result.stderr
    value = json.loads(result.stdout)
    assert set(value) == {"name", "age"} and isinstance(value["age"], int)
    assert "llama-server ready" in result.stderr  # progress while the server starts
    assert "valid Person after 1 attempt(s) [native]" in result.stderr
    if stream:
        assert "partial:" in result.stderr


def test_extract_reads_stdin_and_a_module_type() -> None:
    result = cli("extract", "--type", "examples.people:Person", stdin="")
    assert_one_line_failure(result, "nothing to extract from: give --text, --file or text on stdin")
    assert result.returncode == 1 and "starting llama-server" not in result.stderr


def test_type_from_a_module_in_the_current_directory(tmp_path: Path) -> None:
    """The help text's own example, with the installed console script (whose sys.path[0] is its
    own folder, not the current directory)."""
    (tmp_path / "mymod.py").write_text("from pydantic import BaseModel\n\nclass Person(BaseModel):\n    name: str\n")
    result = cli("extract", "--type", "mymod:Person", "--text", "Ada Lovelace.", cwd=tmp_path, command=(str(SCRIPT),))
    assert result.returncode == 0, result.stderr
    assert set(json.loads(result.stdout)) == {"name"}


def test_type_in_list_brackets_asks_for_a_list_of_it() -> None:
    from so_middleware.cli._types import _load_type

    loaded = _load_type("list[examples/people.py:Person]")
    assert get_origin(loaded) is list and get_args(loaded)[0].__name__ == "Person"
    assert _load_type(" list[list[examples.people:Review]] ") == list[list[_load_type("examples.people:Review")]]


def test_extract_a_list_on_the_local_model() -> None:
    text = "Ada Lovelace is 36. Alan Turing is 41."
    result = cli("extract", "--type", "list[examples/people.py:Person]", "--text", text)
    if result.returncode == 0:  # a typed value: a list of people
        people = json.loads(result.stdout)
        assert isinstance(people, list) and all(set(person) == {"name", "age"} for person in people)
        assert "valid list[people.Person] after" in result.stderr
    else:  # or a typed end, in one line: what the model wrote did not validate
        assert "attempt(s); --debug shows their text]" in assert_one_line_failure(result, "Error: ")


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("nocolon", "--type must look like MODULE:TYPE or FILE.py:TYPE"),
        ("examples/missing.py:X", "--type: no such file examples/missing.py"),
        ("examples/people.py:Nope", "no attribute 'Nope'"),
        ("nomod:Person", "cannot import 'nomod' (No module named 'nomod'); run from the directory that holds it"),
        ("builtins:print", "--type builtins:print: Output type '<built-in function print>' is a function"),
        ("List[examples/people.py:Person", "a list of a type is written list[MODULE:TYPE] (e.g. list[mymod:Person])"),
        ("set[examples/people.py:Person]", "a list of a type is written list[MODULE:TYPE]"),
        ("list[examples/people.py:Nope]", "no attribute 'Nope'"),
    ],
)
def test_bad_type_is_named_before_the_server_starts(spec: str, message: str) -> None:
    result = cli("extract", "--type", spec, "--text", "x")
    assert_one_line_failure(result, message)
    assert result.returncode == 1 and "starting llama-server" not in result.stderr


def test_open_dict_type_gets_no_python_advice() -> None:
    """`builtins:dict` has no named keys: where the schema must be strict it is refused before the
    server starts, with advice for the command (it has no strict option), not "Pass strict=False"."""
    result = cli("extract", "--type", "builtins:dict", "--text", "Ada is 36.")
    assert "strict=False" not in result.stderr
    if result.returncode != 0:
        line = assert_one_line_failure(result, "--type builtins:dict: ")
        assert "Use a type whose keys are all named" in line
        assert "starting llama-server" not in result.stderr
    else:
        assert isinstance(json.loads(result.stdout), dict)


@pytest.mark.parametrize(
    ("args", "message", "code"),
    [
        (["extract", "--type", "examples/people.py:Person", "--file", "nope.txt"],
         "--file: cannot read nope.txt (No such file or directory); give an existing text file", 1),
        (["serve", "--port", "99999"], "argument --port: must be a port number from 1 to 65535, got '99999'", 2),
        (["serve", "--port", "-1"], "argument --port: must be a port number from 1 to 65535", 2),
        (["chat", "--threads", "0"], "argument --threads: must be a positive whole number, got '0'", 2),
        (["extract", "--type", "examples/people.py:Person", "--text", "x", "--model", "gpt-9-nope"],
         "--model gpt-9-nope: OPENAI_API_KEY is not set, so the embedded model SmolLM2-135M-Instruct would answer; "
         "drop --model, or set OPENAI_API_KEY", 1),
        (["extract", "--type", "examples/people.py:Person", "--text", "x", "--model", "gpt-9-nope", "--local"],
         "--model gpt-9-nope: --local was given", 1),
        (["extract", "--text", "x"], "the following arguments are required: --type", 2),
        (["frobnicate"], "invalid choice: 'frobnicate'", 2),
        (["extract", "--type", "examples/people.py:Person", "--input", "in.jsonl", "--concurency", "4"],
         "so-middleware extract: error: unrecognized arguments: --concurency 4; --concurency: did you mean "
         "--concurrency? (see so-middleware extract --help)", 2),
        (["serve", "--prot=8080"], "unrecognized arguments: --prot=8080; --prot: did you mean --port?", 2),
        (["serve", "--colour"], "so-middleware serve: error: unrecognized arguments: --colour (see", 2),
    ],
    ids=["missing-file", "port-too-big", "port-negative", "threads-zero", "model-without-key", "model-with-local",
         "no-type", "unknown-command", "misspelled-flag", "misspelled-flag-with-value", "unknown-flag"],
)  # fmt: skip
def test_failures_are_one_line_before_any_server_starts(args: list[str], message: str, code: int) -> None:
    result = cli(*args)
    assert_one_line_failure(result, message)
    assert result.returncode == code and "starting llama-server" not in result.stderr


def test_debug_shows_the_traceback() -> None:
    result = cli("extract", "--type", "examples/people.py:Person", "--file", "nope.txt", "--debug")
    assert result.returncode == 1
    assert "Traceback (most recent call last)" in result.stderr and "FileNotFoundError" in result.stderr
    assert result.stderr.rstrip().splitlines()[-1].startswith("[so-middleware] error: --file: cannot read nope.txt")


def test_hosted_key_without_network_names_the_cause_and_local() -> None:
    """A closed loopback port stands in for "no network"; the base URL's userinfo and the key
    never appear in what the command prints."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = {"OPENAI_API_KEY": "sk-test-secret-key", "OPENAI_BASE_URL": f"http://ada:pw-secret@127.0.0.1:{port}/v1"}
    result = cli("extract", "--type", "examples/people.py:Person", "--text", "Ada is 36.", env=env)
    line = assert_one_line_failure(result, "cannot reach the hosted openai API (APIConnectionError")
    assert line.endswith("or pass --local to use the embedded model") and "OPENAI_BASE_URL" in line
    assert "pw-secret" not in result.stderr + result.stdout and "secret-key" not in result.stderr + result.stdout
    assert result.returncode == 1 and "starting llama-server" not in result.stderr


def test_urls_in_errors_show_no_userinfo(tmp_path: Path) -> None:
    (tmp_path / "leaky.py").write_text('raise RuntimeError("cannot reach https://ada:pw-secret@example.invalid/v1")\n')
    result = cli("extract", "--type", "leaky:Person", "--text", "x", cwd=tmp_path)
    assert_one_line_failure(result, "importing leaky failed: RuntimeError: cannot reach https://***@example.invalid/v1")
    assert "pw-secret" not in result.stderr


def test_extract_text_with_base_url_asks_that_server() -> None:
    """`--base-url` applies to one `--text` as it does to `--input`: that server answers, no model starts."""
    sys.path.insert(0, str(ROOT / "tests" / "batch"))
    try:
        from extraction_server import ExtractionServer
    finally:
        sys.path.pop(0)
    with ExtractionServer() as server:
        args = ["--type", "tests/batch/extraction_server.py:Row", "--text", "item 7", "--base-url", server.base_url]
        result = cli("extract", *args)
        assert server.items_requested() == [7]
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == {"n": 7, "word": "w7"}
    assert "using the server at http://127.0.0.1:" in result.stderr and "starting llama-server" not in result.stderr


@pytest.mark.parametrize(
    ("extra", "message"),
    [(["--local"], "--base-url names a server and --local asks for the embedded model: give one of them"),
     (["--threads", "2"], "--threads sets the embedded model's threads; add --local, or drop --threads (--base-url is given)")],
)  # fmt: skip
@pytest.mark.parametrize("many", [False, True], ids=["text", "input"])
def test_base_url_with_embedded_model_flags_is_refused(
    extra: list[str], message: str, many: bool, tmp_path: Path
) -> None:
    source = ["--text", "x"]
    if many:
        (tmp_path / "in.jsonl").write_text('{"id": "a", "text": "x"}\n')
        source = ["--input", str(tmp_path / "in.jsonl")]
    args = ["extract", "--type", "examples/people.py:Person", *source, "--base-url", "http://127.0.0.1:9/v1"]
    result = cli(*args, *extra)
    assert_one_line_failure(result, message)
    assert result.returncode == 1 and "starting llama-server" not in result.stderr


def test_base_url_speaks_the_providers_protocol_for_one_text_and_many() -> None:
    from so_middleware.anthropic import AnthropicChatClient
    from so_middleware.batch._cli import server_client
    from so_middleware.openai import OpenAIChatClient, OpenAIResponsesClient

    anthropic_client = server_client("anthropic", "http://127.0.0.1:9/v1", None, None)
    assert isinstance(anthropic_client, AnthropicChatClient)
    assert str(anthropic_client.sdk_client.base_url).rstrip("/") == "http://127.0.0.1:9"  # the SDK adds /v1/messages
    assert isinstance(server_client("openai", "http://127.0.0.1:9/v1", "m", None), OpenAIChatClient)
    assert isinstance(server_client("openai-responses", "http://127.0.0.1:9/v1", "m", None), OpenAIResponsesClient)


def test_threads_with_a_hosted_key_is_refused() -> None:
    env = {"OPENAI_API_KEY": "sk-test"}
    result = cli("extract", "--type", "examples/people.py:Person", "--text", "x", "--threads", "2", env=env)
    assert_one_line_failure(result, "--threads sets the embedded model's threads; add --local, or drop --threads")


def test_serve_on_a_taken_port_gives_command_line_advice() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = cli("serve", "--port", str(port))
    line = assert_one_line_failure(
        result, f"port {port} is already in use: pick another with --port N, or leave --port out for a free one"
    )
    assert "port=None" not in line and result.returncode == 2


@pytest.mark.parametrize(
    "command",
    [(sys.executable, "-m", "so_middleware"), (sys.executable, "-m", "so_middleware.cli"), (str(SCRIPT),)],
    ids=["python-m-package", "python-m-cli", "console-script"],
)
def test_version_and_help(command: tuple[str, ...]) -> None:
    from so_middleware import __version__

    version = cli("--version", command=command)
    assert version.returncode == 0 and version.stdout.strip() == f"so-middleware {__version__}"
    help_text = cli("--help", command=command)
    assert help_text.returncode == 0 and all(name in help_text.stdout for name in ("serve", "chat", "extract"))


def test_chat_has_argument_help() -> None:
    result = cli("chat", "--help")
    assert result.returncode == 0
    for fragment in ("prompt", "what to say", "--max-tokens", "the answer's token limit", "--threads", "--debug"):
        assert fragment in result.stdout, fragment


def test_chat_command() -> None:
    result = cli("chat", "Say hi.", "--max-tokens", "8", "--threads", "1")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() and "finish_reason=" in result.stderr
    assert "1 thread(s)" in result.stderr


def test_serve_threads_reach_llama_server() -> None:
    process = subprocess.Popen(
        [sys.executable, "-m", "so_middleware", "serve", "--threads", "1"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        pid = int(re.findall(r"\(pid (\d+)\)", wait_for_line(process, "llama-server ready"))[0])
        arguments = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        assert arguments[arguments.index(b"-t") + 1] == b"1"
        assert arguments[arguments.index(b"--alias") + 1] == b"SmolLM2-135M-Instruct"
        wait_for_line(process, "press Ctrl-C")  # a signal during start-up exits 130 instead
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=30) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


def test_sigterm_during_extract_stops_the_server_and_leaves_no_file(tmp_path: Path) -> None:
    text = "John Smith is a 35-year-old engineer from Leeds. " * 150  # a long prompt: still working at SIGTERM
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    env.pop("OPENAI_API_KEY", None)
    process = subprocess.Popen(
        [sys.executable, "-m", "so_middleware", "extract", "--type", "examples/people.py:Person", "--text", text],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT, env=env,
    )  # fmt: skip
    try:
        pid = int(re.findall(r"\(pid (\d+)\)", wait_for_line(process, "llama-server ready"))[0])
        assert list(tmp_path.iterdir()) == []
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=30) == 130
        assert "Traceback" not in process.stderr.read()  # type: ignore[union-attr]
        assert not pid_alive(pid)
        assert list(tmp_path.iterdir()) == []
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


def test_ctrl_c_while_the_package_imports_is_one_line_and_130() -> None:
    """The console script's entry point (read from pyproject.toml, run as the installed wrapper runs
    it) gets SIGINT while `so_middleware` is still importing: `-X importtime` reports each module as
    its import ends, so a line for a module inside the package means the package's own import is
    under way. A signal that lands later (the server already starting) is tried again, a few times."""
    entry = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]["so-middleware"]
    module, function = entry.split(":")
    wrapper = f"import sys; from {module} import {function}; sys.exit({function}())"
    for _ in range(5):
        process = subprocess.Popen(
            [sys.executable, "-X", "importtime", "-c", wrapper, "chat", "hi"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT,
        )  # fmt: skip
        try:
            wait_for_line(process, "so_middleware.core._exceptions", timeout=60)
            process.send_signal(signal.SIGINT)
            stderr = process.communicate(timeout=60)[1]
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
        if "starting llama-server" not in stderr:  # it landed during start-up
            break
    else:
        pytest.fail("the signal never landed while the package was importing")
    assert "Traceback" not in stderr and process.returncode == 130, stderr
    assert [line for line in stderr.splitlines() if line.startswith("[so-middleware]")] == [
        "[so-middleware] interrupted"
    ]
