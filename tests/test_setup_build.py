"""What the README says of the set-up's llama.cpp build: llama-server alone, one compiler per core."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
# as a user's shell has it: `make test` exports the Makefile's own values to the tests it runs
CLEAN_ENV = {key: value for key, value in os.environ.items() if key not in ("LLAMA_CPP_BUILD_JOBS", "CMAKE_ARGS")}


def make_variable(name: str) -> str:
    """The value make gives `name` in the Makefile (expanded), read with `make -p -n`."""
    printed = subprocess.run(
        ["make", "-s", "-n", "-p", "-f", str(ROOT / "Makefile"), "setup"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        env=CLEAN_ENV,
        check=False,
    ).stdout
    found = re.search(rf"^{name} :?= (.*)$", printed, flags=re.M)
    assert found, f"{name} is not set in the Makefile"
    return found.group(1)


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_the_build_includes_the_server_only_script_which_exists() -> None:
    args = make_variable("CMAKE_ARGS")
    script = re.search(r"-DCMAKE_PROJECT_TOP_LEVEL_INCLUDES=(\S+)", args)
    assert script, args
    path = Path(script.group(1))
    assert path == ROOT / "cmake" / "llama-server-only.cmake" and path.is_file()
    text = path.read_text()
    assert 'NOT target STREQUAL "llama-server"' in text and "EXCLUDE_FROM_ALL TRUE" in text


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_the_build_runs_one_compiler_per_core() -> None:
    assert "nproc" in make_variable("LLAMA_CPP_BUILD_JOBS")
    jobs = subprocess.run(
        ["make", "-s", "-f", str(ROOT / "Makefile"), "--eval", "show: ; @echo $$LLAMA_CPP_BUILD_JOBS", "show"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        env=CLEAN_ENV,
        check=True,
    ).stdout.strip()
    assert jobs.isdigit() and int(jobs) >= 1
