"""The public API type-checks in user code under mypy --strict and pyright: `output_type=Person`
gives `ChatResponse[Person]` (and `AgentResponse[Person]`) through every entry point.

Each checker runs once over tests/typing/sample_usage.py (which must come out clean) and a probe
written here, whose deliberately wrong `assert_type` calls must fail (the check has teeth) and
whose `reveal_type` calls pin what each checker infers for type forms that are not classes.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import sysconfig
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "tests" / "typing" / "sample_usage.py"
LAYER_SAMPLE = ROOT / "tests" / "typing" / "sample_layer.py"  # a layer on the per-verb hooks, as the how-to writes it
BIN = Path(sys.executable).parent

PROBE = """\
from __future__ import annotations

import abc
from typing import Annotated, Any, Literal

from pydantic import BaseModel
from typing_extensions import assert_type, reveal_type

from so_middleware import ChatAgent, chain, with_retries, with_structured_output
from so_middleware.testing import FakeChatClient


class Person(BaseModel):
    name: str


class Pet(BaseModel):
    name: str


class Shape(abc.ABC):
    @abc.abstractmethod
    def area(self) -> float: ...


async def probe() -> None:
    client = with_retries(with_structured_output(FakeChatClient("x")))
    response = await client.get_response("hi", output_type=Person)
    assert_type(response.value, Pet)  # wrong: layer
    assert_type(response.value, Any)  # wrong: any
    assert_type(client.get_response_sync("hi", output_type=Person).value, Pet)  # wrong: sync
    assert_type((await ChatAgent(client).run("hi", output_type=Person)).value, Pet)  # wrong: agent
    await ChatAgent(client, input_type=Person).run(Pet(name="Rex"))  # wrong: input
    ChatAgent(client, input_type=Person).run_sync(Pet(name="Rex"))  # wrong: sync_input
    ChatAgent(client).run_sync("hi", stream=True)  # wrong: sync_stream
    client.get_response_sync("hi", output_typ=Person)  # wrong: sync_keyword
    assert_type(client.get_response_sync("hi", stream=True, output_type=Person), Pet)  # wrong: sync_streamed
    chained = chain(FakeChatClient("x"), with_structured_output)
    assert_type((await chained.get_response("hi", output_type=Person)).value, Pet)  # wrong: chain
    made_with = with_structured_output(FakeChatClient("x"), Person)
    assert_type((await made_with.get_response("hi")).value, Pet)  # wrong: creation
    assert_type((await client.get_response("hi", output_type=Person | None)).value, Person)  # wrong: union
    reveal_type((await client.get_response("hi", output_type=Person | None)).value)  # reveal: union
    reveal_type((await client.get_response("hi", output_type=Annotated[int, "x"])).value)  # reveal: annotated
    reveal_type((await client.get_response("hi", output_type=Literal["a", "b"])).value)  # reveal: literal
    reveal_type((await client.get_response("hi", output_type=Shape)).value)  # reveal: abstract
    reveal_type(response.parse(Person | None))  # reveal: parse-union
"""

WRONG = [
    "layer",
    "any",
    "sync",
    "agent",
    "input",
    "sync_input",
    "sync_stream",
    "sync_keyword",
    "sync_streamed",
    "chain",
    "creation",
    "union",
]

# What each checker infers where `output_type` is not a plain class: `output_type` is a `TypeForm`,
# so both keep unions, Annotated's type, Literal and an abstract class (they spell a Literal union
# apart); they differ on `parse(Person | None)`, which mypy reads as `type[Person] | None` and
# splits over the overloads.
REVEALED = {
    "mypy": {
        "union": "Person | None",
        "annotated": "int",
        "literal": "Literal['a'] | Literal['b']",
        "abstract": "Shape",
        "parse-union": "Any | Person",
    },
    "pyright": {
        "union": "Person | None",
        "annotated": "int",
        "literal": "Literal['a', 'b']",
        "abstract": "Shape",
        "parse-union": "Any",
    },
}


def _marker_lines(kind: str) -> dict[str, int]:
    """1-based line of each `# kind: name` marker in the probe."""
    lines: dict[str, int] = {}
    for number, line in enumerate(PROBE.splitlines(), start=1):
        match = re.search(rf"# {kind}: (\S+)$", line)
        if match:
            lines[match.group(1)] = number
    return lines


def _run(command: list[str]) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "MYPYPATH": str(ROOT), "PYRIGHT_PYTHON_IGNORE_WARNINGS": "1"}
    return subprocess.run(command, capture_output=True, text=True, cwd=ROOT, env=env, timeout=600)


def _mypy(probe: Path) -> list[tuple[str, int, str, str]]:
    result = _run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--strict",
            "--no-incremental",
            "--config-file",
            str(ROOT / "pyproject.toml"),
            "--hide-error-context",
            "--no-error-summary",
            str(SAMPLE),
            str(LAYER_SAMPLE),
            str(probe),
        ]
    )
    found = []
    for line in result.stdout.splitlines():
        match = re.match(r"(.+?):(\d+): (error|note): (.*)$", line)
        assert match, result.stdout + result.stderr
        found.append((Path(match.group(1)).name, int(match.group(2)), match.group(3), match.group(4)))
    return found


def _pyright(probe: Path) -> list[tuple[str, int, str, str]]:
    result = _run(
        [
            str(BIN / "pyright"),
            "--outputjson",
            "--pythonpath",
            sys.executable,
            str(SAMPLE),
            str(LAYER_SAMPLE),
            str(probe),
        ]
    )
    report = json.loads(result.stdout)
    severity = {"information": "note", "error": "error", "warning": "error"}
    return [
        (
            Path(item["file"]).name,
            item["range"]["start"]["line"] + 1,
            severity[item["severity"]],
            item["message"],
        )
        for item in report["generalDiagnostics"]
    ]


@pytest.fixture(scope="module", params=["mypy", "pyright"])
def checked(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> tuple[str, list[Any]]:
    probe = tmp_path_factory.mktemp("typing") / "probe.py"
    probe.write_text(PROBE)
    checker = request.param
    return checker, (_mypy if checker == "mypy" else _pyright)(probe)


def _revealed(checker: str, message: str) -> str:
    """The type a reveal_type note names, without module prefixes."""
    pattern = r'Revealed type is "(.*)"' if checker == "mypy" else r'Type of ".*" is "(.*)"'
    match = re.search(pattern, message, re.DOTALL)
    assert match, message
    return re.sub(r"\b[\w]+\.", "", match.group(1))


def test_sample_usage_type_checks(checked: tuple[str, list[Any]]) -> None:
    """Every `assert_type` in the sample holds: `.value` is `Person` for each entry point."""
    checker, diagnostics = checked
    in_sample = [item for item in diagnostics if item[0] in (SAMPLE.name, LAYER_SAMPLE.name)]
    assert in_sample == [], f"{checker}: {in_sample}"


def test_wrong_assert_type_fails(checked: tuple[str, list[Any]]) -> None:
    """The probe's wrong `assert_type` calls are errors: the types are precise, not Any."""
    checker, diagnostics = checked
    errors = {line for name, line, kind, _ in diagnostics if name == "probe.py" and kind == "error"}
    wrong = _marker_lines("wrong")
    assert set(wrong) == set(WRONG)
    assert errors == set(wrong.values()), f"{checker}: {diagnostics}"


def test_type_forms_that_are_not_classes_are_pinned(checked: tuple[str, list[Any]]) -> None:
    """What each checker infers for unions, Annotated, Literal, an abstract class and `parse(X | None)`."""
    checker, diagnostics = checked
    notes = {line: message for name, line, kind, message in diagnostics if name == "probe.py" and kind == "note"}
    revealed = {name: _revealed(checker, notes[line]) for name, line in _marker_lines("reveal").items()}
    assert revealed == REVEALED[checker]


def test_make_test_runs_both_type_checkers_before_pytest() -> None:
    """docs/tests-and-benchmarks.md says `make test` runs ruff, mypy and pyright, then pytest: the recipe does, in that order."""
    makefile = (Path(__file__).resolve().parent.parent / "Makefile").read_text()
    recipe = makefile.split("\ntest:", 1)[1].split("\n\n", 1)[0]
    steps = [line.strip() for line in recipe.splitlines() if line.startswith("\t") and not line.strip().startswith("#")]
    order = [
        next(i for i, step in enumerate(steps) if tool in step) for tool in ("ruff check", "mypy", "pyright", "pytest")
    ]
    assert order == sorted(order), steps
    assert (Path(__file__).resolve().parent.parent / ".ci" / "run").read_text().strip().endswith("make test")


USER_CODE = """\
from pydantic import BaseModel
from so_middleware import with_structured_output
from so_middleware.testing import FakeChatClient


class Person(BaseModel):
    name: str


async def main() -> None:
    client = with_structured_output(FakeChatClient("x"))
    response = await client.get_response("hi", output_type=Person)
    response.value.nmae  # the misspelling a checker that resolves so_middleware finds
"""


@pytest.mark.timeout(900)
def test_after_make_setup_mypy_resolves_so_middleware_from_the_users_own_folder(tmp_path: Path) -> None:
    """`make setup`'s editable install, repeated (without dependencies) in a new environment: mypy run
    from a folder outside the clone, on a file with a misspelled attribute of a typed value, finds it."""
    makefile = (ROOT / "Makefile").read_text()
    [install] = [line for line in makefile.splitlines() if "pip install" in line and "-e '.[test]'" in line]
    settings = install.split("-e '.[test]'", 1)[1].split()  # what the Makefile adds after the package
    environment = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(environment)], check=True, timeout=300)
    python = str(environment / "bin" / "python")
    # the dependencies (pydantic, ...) from this environment, as a path line: no import hook in it
    [site] = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True, text=True, check=True, timeout=60,
    ).stdout.split()  # fmt: skip
    (Path(site) / "dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "MYPYPATH")}
    installed = subprocess.run(
        [python, "-m", "pip", "install", "--quiet", "--no-deps", "-e", str(ROOT), *settings],
        capture_output=True, text=True, env=env, timeout=600,
    )  # fmt: skip
    assert installed.returncode == 0, installed.stderr[-3000:]
    folder = tmp_path / "project"
    folder.mkdir()
    (folder / "app.py").write_text(USER_CODE)
    checked = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", "--python-executable", python, "app.py"],
        capture_output=True, text=True, cwd=folder, env=env, timeout=600,
    )  # fmt: skip
    errors = [line for line in checked.stdout.splitlines() if ": error:" in line]
    assert errors == ['app.py:13: error: "Person" has no attribute "nmae"  [attr-defined]'], checked.stdout
