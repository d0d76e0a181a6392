"""The tests against the real 135M model, run again and again on a loaded machine: they must pass
every time, whatever the model writes and however slow the machine is.

    .venv/bin/python bench/loaded_loop.py                   # 10 runs next to 2 busy processes
    .venv/bin/python bench/loaded_loop.py --runs 3 --busy 1 -- -k gateway   # more pytest arguments

Each run is `pytest -m local_server -p no:cacheprovider` (the README and docs blocks included),
next to `--busy` processes `python -c 'while 1: pass'` that compete for the cores the whole time.
The loop stops at the first failing run. Writes `bench/results/loaded_loop.json`: each run's exit
code, seconds, pytest's closing line and the load average before and after it.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results" / "loaded_loop.json"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--busy", type=int, default=2, help="busy processes beside the tests")
    parser.add_argument("pytest_args", nargs="*", help="more pytest arguments (after --)")
    args = parser.parse_args()
    busy = [subprocess.Popen([sys.executable, "-c", "while 1: pass"]) for _ in range(args.busy)]
    runs: list[dict[str, Any]] = []
    try:
        for number in range(1, args.runs + 1):
            command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-m", "local_server",
                       *args.pytest_args]  # fmt: skip
            load_before, started = os.getloadavg()[0], time.monotonic()
            result = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=False)
            closing = (result.stdout.strip().splitlines() or [""])[-1]
            runs.append({"run": number, "exit_code": result.returncode, "seconds": round(time.monotonic() - started),
                         "pytest": closing, "load_before": round(load_before, 1),
                         "load_after": round(os.getloadavg()[0], 1)})  # fmt: skip
            print(f"run {number}: exit {result.returncode} in {runs[-1]['seconds']} s: {closing}", flush=True)
            if result.returncode != 0:
                print(result.stdout[-6000:], flush=True)
                break
    finally:
        for process in busy:
            process.kill()
            process.wait()
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps({"busy": args.busy, "pytest_args": args.pytest_args, "runs": runs}, indent=2) + "\n")
    passed = sum(run["exit_code"] == 0 for run in runs)
    print(f"{passed} of {len(runs)} runs passed in a row next to {args.busy} busy process(es)")
    return 0 if passed == args.runs else 1


if __name__ == "__main__":
    sys.exit(main())
