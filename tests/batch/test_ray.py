"""Ray Data: extraction as `map_batches` on a local Ray instance (`ray.init(num_cpus=2)`), against the
loopback `ExtractionServer` and against the real local model; the spec travels without a key."""

from __future__ import annotations

import json
import os
import pickle
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import ray
import ray.data
from extraction_server import ExtractionServer, Row
from pydantic import BaseModel

from so_middleware import UserError
from so_middleware.batch import extract_many_sync
from so_middleware.batch.ray import ClientSpec, RayExtractor, _pool_size, extract_dataset
from so_middleware.local import LocalModelServer, chat_client
from so_middleware.middleware.structured_output import OutputSettings
from so_middleware.openai import LLAMA_SERVER_CHAT

HERE = Path(__file__).resolve().parent
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning:ray")  # Ray's own deprecations, third-party noise


class Age(BaseModel):
    """A small answer, so 200 rows on the local model stay quick."""

    age: int


@pytest.fixture(scope="module")
def local_ray() -> Iterator[None]:
    # Workers import the test types (extraction_server, this module) by name: give them this folder.
    path = os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")])
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, runtime_env={"env_vars": {"PYTHONPATH": path}})
    yield
    ray.shutdown()


def test_the_spec_pickles_without_the_key_value() -> None:
    os.environ["SO_MIDDLEWARE_TEST_KEY"] = "sk-secret-value"
    try:
        spec = ClientSpec("openai-chat", "gpt-4o-mini", api_key_env="SO_MIDDLEWARE_TEST_KEY", max_concurrency=4)
        payload = pickle.dumps(spec)
        assert b"sk-secret-value" not in payload and b"SO_MIDDLEWARE_TEST_KEY" in payload
        client = pickle.loads(payload).build()  # the key is read where the client is built
        assert client.sdk_client.api_key == "sk-secret-value"
    finally:
        del os.environ["SO_MIDDLEWARE_TEST_KEY"]
    with pytest.raises(UserError, match="names an environment variable"):
        ClientSpec("openai-chat", "m", api_key_env="sk-abc123-not-a-name!")
    with pytest.raises(UserError, match="adapter must be"):
        ClientSpec("bedrock", "m")  # type: ignore[arg-type]


def test_the_extractor_returns_one_row_per_input_in_order() -> None:
    with ExtractionServer(invalid=frozenset({2})) as server:
        spec = ClientSpec("openai-chat", "m", base_url=server.base_url, settings=OutputSettings(max_retries=0))
        extractor = RayExtractor(spec, Row)
        rows = extractor({"id": ["a", "b", "c"], "text": ["item 1", "item 2", "item 3"]})
        extractor.close()
    assert rows["id"] == ["a", "b", "c"] and rows["ok"] == [True, False, True]
    assert json.loads(rows["value"][0]) == {"n": 1, "word": "w1"} and rows["value"][1] is None
    assert rows["error"] == [None, "ModelBehaviorError", None]
    assert rows["raw_texts"][1] and set(rows["raw_texts"][1]) == {"not json"}  # the text of every attempt
    record = json.loads(rows["record"][1])
    assert record["id"] == "b" and record["error"]["type"] == "ModelBehaviorError"


@pytest.mark.parametrize(
    ("actors", "num_cpus", "cpus", "expected"),
    [(None, 0.25, 2.0, 4), (None, 1.0, 2.0, 1), (None, 0.25, 64.0, 16), (None, 0.5, 8.0, 14), (3, 0.25, 2.0, 3),
     (4, 0.25, 2.0, 4), (16, 0.25, None, 16), (None, 0.25, None, 1)],
)  # fmt: skip
def test_the_pool_fills_the_cpus_but_the_reads(
    actors: int | None, num_cpus: float, cpus: float | None, expected: int
) -> None:
    assert _pool_size(actors, num_cpus, cpus) == expected


@pytest.mark.parametrize(
    ("actors", "num_cpus", "cpus", "message"),
    [(16, 0.25, 2.0, r"actors=16 with num_cpus=0.25 each need 4 CPUs.*the cluster has 2: the pool would wait forever. "
                     r"Pass actors=4 or fewer"),
     (2, 1.0, 2.0, "Pass actors=1 or fewer"),
     (None, 0.25, 1.0, r"the cluster has 1 CPU\(s\): Ray Data's read stage needs 1"),
     (0, 0.25, 2.0, "actors must be an int of at least 1, not 0"), (True, 0.25, 2.0, "not True")],
)  # fmt: skip
def test_a_pool_that_can_never_run_is_refused(actors: Any, num_cpus: float, cpus: float, message: str) -> None:
    with pytest.raises(UserError, match=message):
        _pool_size(actors, num_cpus, cpus)


def test_the_default_pool_reads_a_file_on_two_cpus_and_an_impossible_one_is_refused(
    local_ray: None, tmp_path: Path
) -> None:
    """A pool that takes every CPU starves Ray Data's read stage and waits forever (seen with 2 actors
    of 1 CPU on 2 CPUs): the default leaves the read its CPU; `actors=16` is refused, not left waiting."""
    source = tmp_path / "docs.jsonl"
    source.write_text("".join(json.dumps({"id": f"r{n}", "text": f"item {n}"}) + "\n" for n in range(40)))
    with ExtractionServer() as server:
        spec = ClientSpec("openai-chat", "m", base_url=server.base_url, max_concurrency=2)
        with pytest.raises(UserError, match="would wait forever"):
            extract_dataset(ray.data.read_json(str(source)), spec, Row, actors=16)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            dataset = extract_dataset(ray.data.read_json(str(source)), spec, Row, batch_size=8)
        assert not [w for w in caught if "concurrency" in str(w.message)]  # map_batches' deprecated argument
        rows = dataset.take_all()
    assert sorted(row["id"] for row in rows) == sorted(f"r{n}" for n in range(40))


def test_per_actor_limits_hold_on_a_ray_pool(local_ray: None) -> None:
    with ExtractionServer(delay=0.05) as server:
        spec = ClientSpec("openai-chat", "m", base_url=server.base_url, max_concurrency=3)
        dataset = ray.data.from_items([{"id": f"r{n}", "text": f"item {n}"} for n in range(120)])
        rows = extract_dataset(dataset, spec, Row, actors=2, batch_size=20).take_all()
    assert sorted(row["id"] for row in rows) == sorted(f"r{n}" for n in range(120))
    assert all(json.loads(row["value"])["n"] == int(row["id"][1:]) for row in rows)
    assert server.peak_in_flight <= 2 * 3  # two actors, three calls each at most


@pytest.mark.local_server
@pytest.mark.timeout(600)  # 200 real model calls on two slots of a loaded 2-core machine
def test_ray_extracts_200_rows_on_the_local_model_in_extract_many_shape(
    local_ray: None, local_server: LocalModelServer
) -> None:
    texts = [{"id": f"p{n}", "text": f"Person {n} is {20 + n % 50} years old."} for n in range(200)]
    spec = ClientSpec(
        "openai-chat",
        local_server.model,
        base_url=local_server.base_url,
        capabilities=LLAMA_SERVER_CHAT,
        max_concurrency=2,
    )
    options = {"max_tokens": 24, "temperature": 0}
    dataset = extract_dataset(ray.data.from_items(texts), spec, Age, actors=2, batch_size=25, options=options)
    rows = {row["id"]: row for row in dataset.take_all()}
    assert rows.keys() == {row["id"] for row in texts}
    assert sum(row["ok"] for row in rows.values()) >= 150  # the schema is grammar-enforced on this route
    for row in rows.values():
        record = json.loads(row["record"])
        assert row["ok"] == record["ok"] and row["raw_texts"] == [a["text"] for a in record["attempts"]]
        if row["ok"]:
            Age.model_validate_json(row["value"])
        else:
            assert row["error"] == record["error"]["type"]
    # the same shape as extract_many's lines for the same inputs
    client = chat_client(local_server)
    direct = {r.id: r.to_record(Age) for r in extract_many_sync(client, texts[:3], Age, options=options)}
    for key, expected in direct.items():
        record = json.loads(rows[key]["record"])
        assert set(record) == set(expected) and set(record["usage"] or {}) == set(expected["usage"] or {})
        assert [set(a) for a in record["attempts"]] == [set(a) for a in expected["attempts"]]
