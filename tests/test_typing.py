"""The public API type-checks in user code (mypy --strict): awaiting a layered client gives a
ChatResponse, `stream=True` gives a ResponseStream, through every layer."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_user_code_type_checks() -> None:
    sample = ROOT / "tests" / "typing" / "sample_usage.py"
    env = {**os.environ, "MYPYPATH": str(ROOT)}
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--strict",
            "--no-incremental",
            "--config-file",
            str(ROOT / "pyproject.toml"),
            str(sample),
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr
