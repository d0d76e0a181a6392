"""The install path of README's "Install" section, outside the clone: a wheel built from it, a new
virtual environment, then the `[openai]` hero snippet and the `[local]` extract, each from an empty
directory (so nothing of the clone is importable). pip reaches the package index (its cache first);
llama-server comes from pip's cached wheel, which `make setup` built (`so-middleware setup-local`)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import venv
from pathlib import Path

import pytest

from so_middleware.local import LocalModelServer

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()
HERO = README.split("```python\n", 1)[1].split("```", 1)[0]
PERSON = "from pydantic import BaseModel\n\n\nclass Person(BaseModel):\n    name: str\n    age: int\n"

pytestmark = [pytest.mark.local_server, pytest.mark.timeout(1500)]


def run(command: list[str], cwd: Path, env: dict[str, str] | None = None, timeout: float = 900) -> str:
    result = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False)
    assert result.returncode == 0, f"{command}: {result.stdout[-2000:]}\n{result.stderr[-4000:]}"
    return result.stdout


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", str(out), str(ROOT)], cwd=out)
    [built] = out.glob("so_middleware-*.whl")
    return built


@pytest.fixture(scope="module")
def environment(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A new virtual environment (no site packages of the test environment)."""
    folder = tmp_path_factory.mktemp("venv")
    venv.create(folder, with_pip=True, clear=True)
    return folder / "bin"


def test_the_wheel_holds_the_package_data(wheel: Path) -> None:
    import zipfile

    names = zipfile.ZipFile(wheel).namelist()
    assert "so_middleware/py.typed" in names and "so_middleware/local/llama-server-only.cmake" in names
    assert "_so_middleware_cli.py" in names  # the console script's entry point
    assert not [name for name in names if name.startswith(("tests/", "bench/"))]


def test_openai_extra_runs_the_hero_snippet_outside_the_clone(
    wheel: Path, environment: Path, local_server: LocalModelServer, tmp_path: Path
) -> None:
    run([str(environment / "python"), "-m", "pip", "install", "--quiet", f"{wheel}[openai]"], cwd=tmp_path)
    script = "import asyncio\n\n\nasync def main():\n" + "".join(f"    {line}\n" for line in HERO.splitlines())
    script = script.replace("    response.value  #", "    print(response.value)  #").replace(
        "\n    class ", "\n    class "
    )
    script += "\n\nasyncio.run(main())\n"
    (tmp_path / "hero.py").write_text(script)
    env = {**os.environ, "OPENAI_BASE_URL": local_server.base_url, "OPENAI_API_KEY": "sk-local"}
    env.pop("PYTHONPATH", None)
    printed = run([str(environment / "python"), "hero.py"], cwd=tmp_path, env=env, timeout=300)
    assert printed.strip().startswith("name=") and "age=" in printed  # a typed Person, whatever its values
    where = run([str(environment / "python"), "-c", "import so_middleware; print(so_middleware.__file__)"], tmp_path)
    assert str(environment.parent) in where and str(ROOT) not in where


def test_local_extra_extracts_from_an_empty_directory(wheel: Path, environment: Path, tmp_path: Path) -> None:
    run([str(environment / "python"), "-m", "pip", "install", "--quiet", f"{wheel}[local]"], cwd=tmp_path)
    run([str(environment / "so-middleware"), "setup-local", "--quiet"], cwd=tmp_path, timeout=1200)
    (tmp_path / "people.py").write_text(PERSON)
    env = {key: value for key, value in os.environ.items() if not key.startswith(("OPENAI_", "ANTHROPIC_"))}
    env.pop("PYTHONPATH", None)
    env.pop("SO_MIDDLEWARE_LLAMA_SERVER", None)
    printed = run(
        [str(environment / "so-middleware"), "extract", "--type", "people:Person", "--text", "Ada Lovelace was 36."],
        cwd=tmp_path, env=env, timeout=300,
    )  # fmt: skip
    assert set(json.loads(printed)) == {"name", "age"}


@pytest.fixture
def clean_environment(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A new virtual environment of its own: the other tests' extras are not in it."""
    folder = tmp_path_factory.mktemp("clean-venv")
    venv.create(folder, with_pip=True, clear=True)
    return folder / "bin"


def test_google_extra_makes_a_typed_call_without_the_other_sdks(
    wheel: Path, clean_environment: Path, tmp_path: Path
) -> None:
    """`[google]` alone: a typed call against the Gemini stand-in, with neither openai nor anthropic
    installed or imported."""
    sys.path.insert(0, str(ROOT / "tests" / "providers" / "google"))
    from gemini_server import Answer, GeminiServer, text_answer

    from so_middleware.gateway._server import AppServer

    run([str(clean_environment / "python"), "-m", "pip", "install", "--quiet", f"{wheel}[google]"], cwd=tmp_path)
    script = (
        "import sys\n"
        "from google import genai\n"
        "from pydantic import BaseModel\n"
        "from so_middleware import with_structured_output\n\n\n"
        "class City(BaseModel):\n    name: str\n    population: int\n\n\n"
        'client = with_structured_output(genai.Client(), model="gemini-2.5-flash")\n'
        'print(repr(client.get_response_sync("Oslo?", output_type=City).value))\n'
        'print(sorted(name for name in ("openai", "anthropic") if name in sys.modules))\n'
    )
    (tmp_path / "gemini.py").write_text(script)
    server = GeminiServer()
    server.script(Answer(text_answer('{"name": "Oslo", "population": 709000}')))
    with AppServer(server.app()) as running:
        env = {**os.environ, "GOOGLE_GEMINI_BASE_URL": running.root_url, "GEMINI_API_KEY": "test-key"}
        env.pop("PYTHONPATH", None)
        env.pop("GOOGLE_API_KEY", None)
        printed = run([str(clean_environment / "python"), "gemini.py"], cwd=tmp_path, env=env, timeout=300)
    assert printed.splitlines() == ["City(name='Oslo', population=709000)", "[]"]
    assert server.requests[0][1]["generationConfig"]["responseMimeType"] == "application/json"
    missing = run(
        [str(clean_environment / "python"), "-c", "import importlib.util as u; print(u.find_spec('openai'))"], tmp_path
    )
    assert missing.strip() == "None"


def test_ollama_extra_makes_a_typed_call_without_the_other_sdks(
    wheel: Path, clean_environment: Path, tmp_path: Path
) -> None:
    """`[ollama]` alone: a typed call against the Ollama stand-in, with neither openai nor anthropic imported."""
    sys.path.insert(0, str(ROOT / "tests" / "providers" / "ollama"))
    from ollama_server import Answer, OllamaServer, chat_answer

    from so_middleware.gateway._server import AppServer

    run([str(clean_environment / "python"), "-m", "pip", "install", "--quiet", f"{wheel}[ollama]"], cwd=tmp_path)
    script = (
        "import sys\n"
        "import ollama\n"
        "from pydantic import BaseModel\n"
        "from so_middleware import with_structured_output\n\n\n"
        "class Pet(BaseModel):\n    name: str\n    legs: int\n\n\n"
        'client = with_structured_output(ollama.AsyncClient(), model="llama3.2")\n'
        'print(repr(client.get_response_sync("Rex?", output_type=Pet).value))\n'
        'print(sorted(name for name in ("openai", "anthropic", "google") if name in sys.modules))\n'
        'print("orjson" in sys.modules)  # installed with the extra, for the streamed answer lines\n'
    )
    (tmp_path / "pet.py").write_text(script)
    server = OllamaServer()
    server.script(Answer(chat_answer('{"name": "Rex", "legs": 4}')))
    with AppServer(server.app()) as running:
        env = {**os.environ, "OLLAMA_HOST": running.root_url}
        env.pop("PYTHONPATH", None)
        printed = run([str(clean_environment / "python"), "pet.py"], cwd=tmp_path, env=env, timeout=300)
    assert printed.splitlines() == ["Pet(name='Rex', legs=4)", "[]", "True"]
    assert server.requests[0]["format"]["properties"]["legs"] == {"title": "Legs", "type": "integer"}


def test_bedrock_extra_makes_a_typed_call_without_the_other_sdks(
    wheel: Path, clean_environment: Path, tmp_path: Path
) -> None:
    """`[bedrock]` alone: a typed call through a plain `boto3.client("bedrock-runtime")` (found by
    `as_chat_client` through the wheel's entry point) against the Bedrock stand-in, which boto3
    reaches through `AWS_ENDPOINT_URL_BEDROCK_RUNTIME`; no other SDK imported."""
    sys.path.insert(0, str(ROOT / "tests" / "providers" / "bedrock"))
    from bedrock_server import Answer, BedrockServer, text_answer

    from so_middleware.gateway._server import AppServer

    # without PYTHONPATH: a clone on it (its .egg-info) reads to pip as so-middleware already installed
    clean = {name: value for name, value in os.environ.items() if name != "PYTHONPATH"}
    run([str(clean_environment / "python"), "-m", "pip", "install", "--quiet", f"{wheel}[bedrock]"], tmp_path, clean)
    script = (
        "import sys\n"
        "import boto3\n"
        "from pydantic import BaseModel\n"
        "from so_middleware import with_structured_output\n\n\n"
        "class City(BaseModel):\n    name: str\n    population: int\n\n\n"
        'sdk = boto3.client("bedrock-runtime")\n'
        'client = with_structured_output(sdk, model="us.anthropic.claude-haiku-4-5-20251001-v1:0")\n'
        'print(repr(client.get_response_sync("Oslo?", output_type=City).value))\n'
        'print(sorted(name for name in ("openai", "anthropic", "google", "ollama") if name in sys.modules))\n'
    )
    (tmp_path / "bedrock.py").write_text(script)
    server = BedrockServer()
    server.script(Answer(text_answer('{"name": "Oslo", "population": 709000}')))
    with AppServer(server.app()) as running:
        env = {
            **os.environ,
            "AWS_ENDPOINT_URL_BEDROCK_RUNTIME": running.root_url,
            "AWS_DEFAULT_REGION": "us-east-1",
            "AWS_ACCESS_KEY_ID": "AKIDEXAMPLE",
            "AWS_SECRET_ACCESS_KEY": "dummy",
            "AWS_EC2_METADATA_DISABLED": "true",
        }
        env.pop("PYTHONPATH", None)
        printed = run([str(clean_environment / "python"), "bedrock.py"], cwd=tmp_path, env=env, timeout=300)
    assert printed.splitlines() == ["City(name='Oslo', population=709000)", "[]"]
    assert isinstance(server.requests[0][1]["outputConfig"]["textFormat"]["structure"]["jsonSchema"]["schema"], str)


def test_mistral_extra_makes_a_typed_call_without_the_other_sdks(
    wheel: Path, clean_environment: Path, tmp_path: Path
) -> None:
    """`[mistral]` alone: a typed call against the Mistral stand-in, with none of the other SDKs imported."""
    sys.path.insert(0, str(ROOT / "tests" / "providers" / "mistral"))
    from mistral_server import Answer, MistralServer, chat_answer

    from so_middleware.gateway._server import AppServer

    run([str(clean_environment / "python"), "-m", "pip", "install", "--quiet", f"{wheel}[mistral]"], cwd=tmp_path)
    script = (
        "import os\n"
        "import sys\n"
        "from mistralai.client import Mistral\n"
        "from pydantic import BaseModel\n"
        "from so_middleware import with_structured_output\n\n\n"
        "class City(BaseModel):\n    name: str\n    population: int\n\n\n"
        'sdk = Mistral(server_url=os.environ["MISTRAL_SERVER_URL"])\n'
        'client = with_structured_output(sdk, model="mistral-small-latest")\n'
        'print(repr(client.get_response_sync("Oslo?", output_type=City).value))\n'
        'print(sorted(name for name in ("openai", "anthropic", "google", "ollama") if name in sys.modules))\n'
    )
    (tmp_path / "city.py").write_text(script)
    server = MistralServer()
    server.script(Answer(chat_answer('{"name": "Oslo", "population": 709000}')))
    with AppServer(server.app()) as running:
        env = {**os.environ, "MISTRAL_SERVER_URL": running.root_url, "MISTRAL_API_KEY": "test-key"}
        env.pop("PYTHONPATH", None)
        printed = run([str(clean_environment / "python"), "city.py"], cwd=tmp_path, env=env, timeout=300)
    assert printed.splitlines() == ["City(name='Oslo', population=709000)", "[]"]
    assert server.requests[0]["response_format"]["json_schema"]["strict"] is True
