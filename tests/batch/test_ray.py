"""Ray Data: extraction as `map_batches` on a local Ray instance (`ray.init(num_cpus=2)`), against the
loopback `ExtractionServer` and against the real local model; the spec travels without a key."""

from __future__ import annotations

import json
import os
import pickle
from collections.abc import Iterator
from pathlib import Path

import pytest
import ray
import ray.data
from extraction_server import ExtractionServer, Row
from pydantic import BaseModel

from so_middleware import UserError
from so_middleware.batch import extract_many_sync
from so_middleware.batch.ray import ClientSpec, RayExtractor, extract_dataset
from so_middleware.local import LocalModelServer, chat_client
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
        spec = ClientSpec("openai-chat", "m", base_url=server.base_url, max_retries=0)
        extractor = RayExtractor(spec, Row)
        rows = extractor({"id": ["a", "b", "c"], "text": ["item 1", "item 2", "item 3"]})
        extractor.close()
    assert rows["id"] == ["a", "b", "c"] and rows["ok"] == [True, False, True]
    assert json.loads(rows["value"][0]) == {"n": 1, "word": "w1"} and rows["value"][1] is None
    assert rows["error"] == [None, "ModelBehaviorError", None]
    assert rows["raw_texts"][1] and set(rows["raw_texts"][1]) == {"not json"}  # the text of every attempt
    record = json.loads(rows["record"][1])
    assert record["id"] == "b" and record["error"]["type"] == "ModelBehaviorError"


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
