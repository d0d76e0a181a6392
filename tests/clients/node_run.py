"""Running the Node clients of tests/clients/package-lock.json (installed by `npm ci` in `make test`)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).parent


def node_modules() -> Path:
    """tests/clients/node_modules, or a skip saying what is missing."""
    if shutil.which("node") is None:
        pytest.skip("node is not installed: the Node clients cannot run")
    modules = HERE / "node_modules"
    if not (modules / ".package-lock.json").is_file():
        pytest.skip("tests/clients/node_modules is missing: `make test` runs `npm ci` there first")
    return modules


def run_node(script: str, base_url: str, timeout: float = 120, **env: str) -> dict[str, Any]:
    """Runs tests/clients/SCRIPT against the gateway at BASE_URL (more environment variables in ENV);
    returns the JSON it prints last."""
    node_modules()
    env = {**os.environ, "GATEWAY_BASE_URL": base_url, "OPENAI_API_KEY": "none", **env}
    done = subprocess.run(["node", str(HERE / script)], cwd=HERE, env=env, capture_output=True, text=True,
                          timeout=timeout)  # fmt: skip
    assert done.returncode == 0, f"{script} exited {done.returncode}:\n{done.stdout}\n{done.stderr}"
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))
