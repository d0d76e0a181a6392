"""`so-middleware extract --input`: thousands of inputs against a loopback server with injected 429s
and resets, kill -9 and Ctrl-C in the middle, the progress display, the local model by default.

The server is `ExtractionServer` (a real HTTP server on 127.0.0.1 in this process) and the CLI a
real subprocess; limits are asserted from the server's own log of when each request arrived.
"""

from __future__ import annotations

import fcntl
import json
import os
import pty
import random
import signal
import socket
import struct
import subprocess
import sys
import termios
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from extraction_server import ExtractionServer, most_in_any_window

ROOT = Path(__file__).resolve().parents[2]
ROW_TYPE = "tests/batch/extraction_server.py:Row"


def command(input_path: Path, output: Path, *extra: str, base_url: str | None = None) -> list[str]:
    args = [sys.executable, "-m", "so_middleware.cli", "extract", "--type", ROW_TYPE, "--input", str(input_path)]
    args += ["--output", str(output), *extra]
    return args + (["--base-url", base_url, "--model", "m"] if base_url else [])


def environment() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY")}
    return {**env, "OPENAI_API_KEY": "test"}


def write_inputs(path: Path, count: int) -> list[str]:
    ids = [f"r{n}" for n in range(count)]
    path.write_text("".join(json.dumps({"id": f"r{n}", "text": f"item {n}"}) + "\n" for n in range(count)))
    return ids


def records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def intact_ids(path: Path) -> list[str]:
    """Ids of the complete lines (a line torn by a kill is not a result)."""
    ids = []
    for line in path.read_bytes().split(b"\n")[:-1]:
        ids.append(json.loads(line)["id"])
    return ids


def wait_for_lines(path: Path, count: int, process: subprocess.Popen[Any], limit: float = 60) -> None:
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline and process.poll() is None:
        if path.exists() and path.read_bytes().count(b"\n") >= count:
            return
        time.sleep(0.01)
    raise AssertionError(f"{path} did not reach {count} lines (exit code {process.poll()})")


def test_2000_inputs_with_429s_and_resets_each_end_once_within_the_concurrency_and_rate(tmp_path: Path) -> None:
    invalid = frozenset(range(0, 2000, 97))
    inputs, output = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    ids = write_inputs(inputs, 2000)
    # a tenth of the answers are slow: the calls in flight reach the limit, the rest of the time the rate binds
    server = ExtractionServer(
        delay=0.06, slow=0.1, slow_delay=0.4, rate_limited=0.01, resets=0.01, retry_after_ms=200, invalid=invalid
    )
    with server:
        args = command(
            inputs, output, "--concurrency", "8", "--rpm", "3600", "--max-retries", "1", base_url=server.base_url
        )
        result = subprocess.run(args, capture_output=True, text=True, cwd=ROOT, env=environment(), timeout=150)
    assert result.returncode == 0, result.stderr[-3000:]
    lines = records(output)
    assert sorted(line["id"] for line in lines) == sorted(ids)  # every input exactly once
    for line in lines:
        n = int(line["id"][1:])
        if line["ok"]:
            assert line["value"] == {"n": n, "word": f"w{n}"}
        else:  # a typed error: what the model wrote each time, or the transport error after every retry
            assert line["error"]["type"] in ("ModelBehaviorError", "RateLimitError", "APIConnectionError"), line
            if n in invalid:
                assert line["error"]["type"] == "ModelBehaviorError"
                texts = [a["text"] for a in line["attempts"]]  # every strategy, or from where the run learned it
                assert set(texts) == {"not json"} and len(texts) in (2, 5)  # then one re-ask
    assert sum(not line["ok"] for line in lines) < len(invalid) + 10
    answers = Counter(served.answer for served in server.served)
    assert answers["429"] > 5 and answers["reset"] > 5  # the faults did happen, and were retried
    # from the server's own log: never more than 8 in flight, never over 3600/min in any window
    assert 7 <= server.peak_in_flight <= 8  # the limit is reached (or nearly), never passed
    arrivals = [served.at for served in server.served]
    assert most_in_any_window(arrivals, 60) <= 3600
    # Stronger, and not vacuous on a 40-second run: the starts are paced evenly (a burst of one), so
    # any window of w seconds holds at most 3600 * w / 60 + 1 requests, down to one second.
    assert most_in_any_window(arrivals, 10) <= 601
    assert most_in_any_window(arrivals, 1) <= 61
    assert "items/s, ETA" in result.stderr  # plain progress lines: stderr is not a terminal
    assert "done " in result.stderr and "failed" in result.stderr and "tokens in=" in result.stderr


def test_kill_9_at_a_random_point_then_the_same_command_finishes_without_repeating_work(tmp_path: Path) -> None:
    inputs, output = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    ids = write_inputs(inputs, 400)
    kill_after = random.Random().randint(10, 350)
    with ExtractionServer(delay=0.02, rate_limited=0.02, resets=0.02, retry_after_ms=50) as server:
        args = command(inputs, output, "--concurrency", "8", base_url=server.base_url)
        first = subprocess.Popen(args, cwd=ROOT, env=environment(), stderr=subprocess.DEVNULL)
        try:
            wait_for_lines(output, kill_after, first)
        finally:
            first.send_signal(signal.SIGKILL)
            first.wait(timeout=30)
        done_before = intact_ids(output)
        requests_before = len(server.items_requested())
        second = subprocess.run(args, capture_output=True, text=True, cwd=ROOT, env=environment(), timeout=120)
        assert second.returncode == 0, second.stderr[-3000:]
        requested_after = {f"r{item}" for item in server.items_requested()[requests_before:]}
    assert first.returncode == -signal.SIGKILL
    final = [line["id"] for line in records(output)]
    assert sorted(final) == sorted(ids), f"killed after {kill_after} lines"  # every id exactly once
    assert not requested_after & set(done_before), f"killed after {kill_after} lines"  # none requested twice
    assert requested_after == set(ids) - set(done_before)
    assert f"skipped {len(done_before)}" in second.stderr


def test_ctrl_c_stops_cleanly_and_the_next_run_resumes(tmp_path: Path) -> None:
    inputs, output = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    ids = write_inputs(inputs, 200)
    with ExtractionServer(delay=0.05) as server:
        args = command(inputs, output, "--concurrency", "4", base_url=server.base_url)
        first = subprocess.Popen(args, cwd=ROOT, env=environment(), stderr=subprocess.PIPE, text=True)
        wait_for_lines(output, 20, first)
        first.send_signal(signal.SIGINT)
        _, stderr = first.communicate(timeout=30)
        assert first.returncode == 130, stderr
        assert "interrupted:" in stderr and "run again to resume" in stderr
        written = records(output)  # every line whole: nothing torn by a clean stop
        assert 20 <= len(written) < 200
        second = subprocess.run(args, capture_output=True, text=True, cwd=ROOT, env=environment(), timeout=120)
    assert second.returncode == 0, second.stderr
    assert sorted(line["id"] for line in records(output)) == sorted(ids)


def test_a_terminal_gets_a_progress_bar(tmp_path: Path) -> None:
    inputs, output = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    write_inputs(inputs, 30)
    with ExtractionServer(delay=0.03, invalid=frozenset({3})) as server:
        leader, follower = pty.openpty()
        fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 120, 0, 0))  # a 120-column terminal
        args = command(inputs, output, "--concurrency", "2", "--max-retries", "0", base_url=server.base_url)
        process = subprocess.Popen(args, cwd=ROOT, env=environment(), stderr=follower, stdout=follower)
        os.close(follower)
        shown = b""
        while True:
            try:
                chunk = os.read(leader, 4096)
            except OSError:  # the process closed the terminal
                break
            if not chunk:
                break
            shown += chunk
        process.wait(timeout=60)
        os.close(leader)
    text = shown.decode(errors="replace")
    assert process.returncode == 0, text
    assert "30/30" in text and "item/s" in text and "failed=1" in text  # tqdm: count, rate, failures
    assert "\r" in text  # redrawn in place


def test_input_does_not_mix_with_text(tmp_path: Path) -> None:
    inputs = tmp_path / "in.jsonl"
    write_inputs(inputs, 1)
    args = command(inputs, tmp_path / "out.jsonl", "--text", "x")
    result = subprocess.run(args, capture_output=True, text=True, cwd=ROOT, env=environment(), timeout=60)
    assert result.returncode == 1 and "--text, --file and --stream do not apply" in result.stderr
    assert not (tmp_path / "out.jsonl").exists()


@pytest.mark.local_server
def test_the_embedded_local_model_is_the_default(tmp_path: Path) -> None:
    inputs, output = tmp_path / "people.jsonl", tmp_path / "out.jsonl"
    inputs.write_text('{"id": "ada", "text": "Ada Lovelace was 36."}\n{"id": "bob", "text": "Bob is 41."}\n')
    args = [
        sys.executable,
        "-m",
        "so_middleware.cli",
        "extract",
        "--type",
        "examples/people.py:Person",
        "--input",
        str(inputs),
        "--output",
        str(output),
        "--max-tokens",
        "64",
    ]
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY")}
    result = subprocess.run(args, capture_output=True, text=True, cwd=ROOT, env=env, timeout=240)
    assert result.returncode == 0, result.stderr
    assert "using the embedded local model" in result.stderr
    lines = {line["id"]: line for line in records(output)}
    assert lines.keys() == {"ada", "bob"}
    for line in lines.values():
        assert set(line["value"]) == {"name", "age"} if line["ok"] else line["error"]["type"]


def test_an_engine_of_another_provider_is_refused_before_any_call(tmp_path: Path) -> None:
    inputs = tmp_path / "in.jsonl"
    write_inputs(inputs, 2)
    with ExtractionServer() as server:
        args = command(inputs, tmp_path / "out.jsonl", "--engine", "anthropic-batch", base_url=server.base_url)
        result = subprocess.run(args, capture_output=True, text=True, cwd=ROOT, env=environment(), timeout=60)
    assert result.returncode == 1 and "--engine anthropic-batch needs that provider's hosted API" in result.stderr
    assert server.served == []
    assert not (tmp_path / "out.jsonl").exists()  # no empty results file left behind


@pytest.mark.local_server
def test_a_batch_engine_on_a_server_without_a_batch_api_says_so_and_leaves_no_file(tmp_path: Path) -> None:
    inputs, output = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    write_inputs(inputs, 2)
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY")}
    args = command(inputs, output, "--engine", "openai-batch", "--poll-interval", "0.1")
    result = subprocess.run(args, capture_output=True, text=True, cwd=ROOT, env=env, timeout=240)
    assert result.returncode == 1 and "using the embedded local model" in result.stderr, result.stderr
    [line] = [line for line in result.stderr.splitlines() if "error:" in line]
    assert "has no batch API (POST /v1/files answered 404): use the direct engine there" in line
    assert "--engine direct" in line and not output.exists()


def test_with_a_key_set_the_hosted_api_is_used_and_retry_failed_runs_failures_again(tmp_path: Path) -> None:
    # OPENAI_BASE_URL (read by the SDK) points the "hosted" API at the loopback server: no network.
    inputs, output = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    write_inputs(inputs, 5)
    args = command(inputs, output, "--max-retries", "0", "--tpm", "1000000")
    with ExtractionServer(invalid=frozenset({2})) as server:
        env = {**environment(), "OPENAI_BASE_URL": server.base_url}
        first = subprocess.run(args, capture_output=True, text=True, cwd=ROOT, env=env, timeout=60)
        assert first.returncode == 0, first.stderr
        assert "using the hosted openai API" in first.stderr
        assert {r["id"]: r["ok"] for r in records(output)}["r2"] is False
        first_post = next(r for r in server.requests if r.method == "POST")  # after the discovery probes
        assert first_post.body["model"] == "gpt-4o-mini"
        server.invalid = frozenset()
        again = subprocess.run(args, capture_output=True, text=True, cwd=ROOT, env=env, timeout=60)
        assert "skipped 5" in again.stderr  # failed ones stay failed unless asked
        retried = subprocess.run(
            [*args, "--retry-failed"], capture_output=True, text=True, cwd=ROOT, env=env, timeout=60
        )
    assert retried.returncode == 0 and "done 1" in retried.stderr and "skipped 4" in retried.stderr
    final = records(output)
    assert sorted(r["id"] for r in final) == [f"r{n}" for n in range(5)] and all(r["ok"] for r in final)


def test_the_server_of_base_url_is_shown_without_its_password(capsys: pytest.CaptureFixture[str]) -> None:
    import argparse

    from so_middleware.batch._cli import _client

    args = argparse.Namespace(provider="openai", base_url="http://me:s3cret@127.0.0.1:9/v1", model="m", local=False)
    with _client(args):
        pass
    err = capsys.readouterr().err
    assert "using the server at http://***@127.0.0.1:9/v1" in err and "s3cret" not in err


def test_a_run_in_which_every_item_failed_exits_1_and_the_rerun_names_retry_failed(tmp_path: Path) -> None:
    inputs, output = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    write_inputs(inputs, 4)
    with ExtractionServer(invalid=frozenset(range(4))) as server:
        args = command(inputs, output, "--max-retries", "0", base_url=server.base_url)
        first = subprocess.run(args, capture_output=True, text=True, cwd=ROOT, env=environment(), timeout=60)
        assert first.returncode == 1, first.stderr
        assert (
            f"every item failed: see the errors in {output}; after fixing the cause, run again with --retry-failed"
            in (first.stderr)
        )
        again = subprocess.run(args, capture_output=True, text=True, cwd=ROOT, env=environment(), timeout=60)
    assert again.returncode == 0, again.stderr  # nothing ran: nothing failed in this run
    assert "skipped 4 (already in the output, 4 of them failed then)" in again.stderr
    assert "4 item(s) failed in an earlier run: --retry-failed runs them again" in again.stderr


@pytest.mark.parametrize(
    ("extra", "message"),
    [(["--concurrency", "0"], "argument --concurrency: must be a whole number of at least 1, got '0'"),
     (["--rpm", "nan"], "argument --rpm: must be a positive number, got 'nan'"),
     (["--tpm", "-5"], "argument --tpm: must be a positive number, got '-5'"),
     (["--max-retries", "-1"], "argument --max-retries: must be a whole number of at least 0, got '-1'"),
     (["--text-field", "body"], "has no 'body' field (it has ['id', 'text']); name the text's field: text_field= "
                                "(--text-field on the command line)")],
)  # fmt: skip
def test_bad_batch_arguments_fail_before_the_embedded_server_starts(
    tmp_path: Path, extra: list[str], message: str
) -> None:
    inputs = tmp_path / "in.jsonl"
    write_inputs(inputs, 2)
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY")}
    args = command(inputs, tmp_path / "out.jsonl", *extra)
    result = subprocess.run(args, capture_output=True, text=True, cwd=ROOT, env=env, timeout=60)
    assert result.returncode in (1, 2) and message in result.stderr, result.stderr
    assert "starting llama-server" not in result.stderr and "Traceback" not in result.stderr


def test_a_missing_input_or_a_locked_output_fails_before_the_embedded_server_starts(tmp_path: Path) -> None:
    from so_middleware.batch import ResultLog

    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY")}
    missing = subprocess.run(
        command(tmp_path / "nope.jsonl", tmp_path / "out.jsonl"), capture_output=True, text=True, cwd=ROOT, env=env,
        timeout=60,
    )  # fmt: skip
    assert missing.returncode == 1 and "nope.jsonl" in missing.stderr, missing.stderr
    assert "starting llama-server" not in missing.stderr
    inputs, output = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    write_inputs(inputs, 2)
    held = ResultLog(output)  # another run holds the output
    try:
        locked = subprocess.run(command(inputs, output), capture_output=True, text=True, cwd=ROOT, env=env, timeout=60)
    finally:
        held.close()
    assert locked.returncode == 1 and str(output) in locked.stderr, locked.stderr
    assert "starting llama-server" not in locked.stderr


def test_a_mistyped_base_url_stops_the_run_with_one_line_naming_it(tmp_path: Path) -> None:
    with socket.socket() as probe:  # a loopback port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    inputs, output = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    write_inputs(inputs, 500)
    base_url = f"http://127.0.0.1:{port}/v1"
    args = command(inputs, output, "--concurrency", "8", base_url=base_url)
    result = subprocess.run(args, capture_output=True, text=True, cwd=ROOT, env=environment(), timeout=120)
    assert result.returncode == 1 and "Traceback" not in result.stderr, result.stderr
    [line] = [line for line in result.stderr.splitlines() if "error:" in line]
    assert "stopped after 10 items in a row could not connect" in line and f"cannot reach {base_url}" in line
    assert "--retry-failed" in line
    assert 10 <= len(records(output)) < 10 + 8  # not a failure written for each of the 500
