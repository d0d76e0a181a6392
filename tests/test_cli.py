"""The `so-middleware` command: extract (the main job), chat, and its errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def cli(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY")}
    return subprocess.run(
        [sys.executable, "-m", "so_middleware.cli", *args],
        input=stdin,
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=240,
    )


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
    result = cli(
        "extract",
        "--type",
        "so_middleware.testing:Reply",
        stdin="",
    )
    assert result.returncode == 1 and "nothing to extract from" in result.stderr


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("nocolon", "MODULE:TYPE"),
        ("examples/missing.py:X", "no such file"),
        ("examples/people.py:Nope", "no attribute"),
    ],
)
def test_bad_type_is_named(spec: str, message: str) -> None:
    result = cli("extract", "--type", spec, "--text", "x")
    assert result.returncode == 1 and message in result.stderr


def test_chat_command() -> None:
    result = cli("chat", "Say hi.", "--max-tokens", "8")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() and "finish_reason=" in result.stderr
