"""Ray Data: the same extraction over a `ray.data.Dataset`, on one machine or a cluster.

    import ray
    from so_middleware.batch.ray import ClientSpec, extract_dataset

    ray.init()  # or ray.init("ray://head:10001") for a cluster
    spec = ClientSpec("openai-chat", "gpt-4o-mini", api_key_env="OPENAI_API_KEY", max_concurrency=8)
    results = extract_dataset(ray.data.read_json("s3://bucket/docs.jsonl"), spec, Person)
    results.write_json("s3://bucket/people/")

Each actor builds its client once, from a `ClientSpec`: the adapter kind, base URL, model, the
layers' settings and the *name* of the environment variable holding the key, read on the worker
(set it there: a cluster's `runtime_env={"env_vars": ...}` or its secrets). No live client and no
key value ever travels in a task. Each actor keeps at most `max_concurrency` calls in flight
(and its own `requests_per_minute`): the cluster's total is that times the actors.

An actor waits on the network, not the CPU: each reserves `num_cpus=0.25` by default, and the
default pool fills the cluster's CPUs but one (at most 16 actors), which Ray Data's read stage
needs: a pool that takes every CPU starves the read and waits forever. A pool that cannot fit
is refused before anything runs.

Every output row has the shape of an `extract_many` result: `id`, `ok`, `value` (JSON text, None
on error), `error` (the error type, None on success), `raw_texts` (the model's text at each
attempt) and `record`, the whole JSON line `extract_many` writes to its output file.
Needs the extra: `pip install so-middleware[ray]`.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from .. import Capabilities, ChatClient, UserError, run_sync
from ..middleware.structured_output import OutputSettings
from ._inputs import Item, read_inputs
from ._run import extract_many_sync
from ._setup import build_client

__all__ = ["ClientSpec", "RayExtractor", "extract_dataset"]

AdapterKind = Literal["openai-chat", "openai-responses", "anthropic"]


@dataclass(frozen=True)
class ClientSpec:
    """How a worker builds its client: picklable, and without secrets (`api_key_env` is a name).

    Example:
        ClientSpec("openai-chat", "gpt-4o-mini", api_key_env="OPENAI_API_KEY", max_concurrency=8)
        ClientSpec("openai-chat", server.model, base_url=server.base_url, capabilities=LLAMA_SERVER_CHAT)
    """

    adapter: AdapterKind
    model: str
    base_url: str | None = None
    api_key_env: str | None = None
    capabilities: Capabilities | None = None
    max_concurrency: int = 8  # per actor
    requests_per_minute: float | None = None  # per actor
    tokens_per_minute: float | None = None  # per actor
    max_attempts: int = 4
    settings: OutputSettings = field(default_factory=OutputSettings)  # mode, max_retries, ...: every item's
    timeout: float = 120.0
    sdk_options: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.adapter not in ("openai-chat", "openai-responses", "anthropic"):
            raise UserError(f"adapter must be openai-chat, openai-responses or anthropic, not {self.adapter!r}")
        if self.api_key_env is not None and not self.api_key_env.isidentifier():
            raise UserError(f"api_key_env names an environment variable, e.g. OPENAI_API_KEY, not {self.api_key_env!r}")

    def build(self) -> ChatClient:
        """The client, with limits, retries and structured output (called once per actor)."""
        key = os.environ.get(self.api_key_env) if self.api_key_env else None
        options = {"api_key": key or "none", "timeout": self.timeout, **self.sdk_options}
        if self.base_url is not None:
            options["base_url"] = self.base_url
        adapter: Any
        if self.adapter == "anthropic":
            import anthropic

            from ..anthropic import AnthropicChatClient

            adapter = AnthropicChatClient(
                anthropic.AsyncAnthropic(**options), self.model, capabilities=self.capabilities
            )
        else:
            import openai

            from ..openai import OpenAIChatClient, OpenAIResponsesClient

            kind = OpenAIChatClient if self.adapter == "openai-chat" else OpenAIResponsesClient
            adapter = kind(openai.AsyncOpenAI(**options), self.model, capabilities=self.capabilities)
        return build_client(
            adapter,
            concurrency=self.max_concurrency,
            requests_per_minute=self.requests_per_minute,
            tokens_per_minute=self.tokens_per_minute,
            max_attempts=self.max_attempts,
            settings=self.settings,
        )


class RayExtractor:
    """The callable class `map_batches` runs: one client per actor, one result row per input row.

    Example:
        dataset.map_batches(RayExtractor, fn_constructor_args=(spec, Person), concurrency=4, batch_size=32)
    """

    def __init__(
        self,
        spec: ClientSpec,
        output_type: Any,
        *,
        id_column: str = "id",
        text_column: str = "text",
        instructions: str | None = None,
        options: Mapping[str, Any] | None = None,
    ) -> None:
        self._client = spec.build()
        self._output_type, self._concurrency, self._settings = output_type, spec.max_concurrency, spec.settings
        self._id_column, self._text_column = id_column, text_column
        self._instructions, self._options = instructions, dict(options or {})

    def __call__(self, batch: Mapping[str, Any]) -> dict[str, list[Any]]:
        """Extract every row of `batch` (a dict of columns); rows come back in input order."""
        texts = [str(text) for text in batch[self._text_column]]
        ids = [str(i) for i in batch[self._id_column]] if self._id_column in batch else None
        items = list(read_inputs([Item(ids[n], text) for n, text in enumerate(texts)] if ids else texts))
        run = extract_many_sync(
            self._client,
            items,
            self._output_type,
            concurrency=self._concurrency,
            instructions=self._instructions,
            options=self._options,
            **dataclasses.asdict(self._settings),
        )
        records = {result.id: result.to_record(self._output_type) for result in run}
        ordered = [records[item.id] for item in items]
        return {
            "id": [record["id"] for record in ordered],
            "ok": [record["ok"] for record in ordered],
            "value": [json.dumps(record["value"]) if record["ok"] else None for record in ordered],
            "error": [None if record["ok"] else record["error"]["type"] for record in ordered],
            "raw_texts": [[attempt["text"] for attempt in record["attempts"]] for record in ordered],
            "record": [json.dumps(record, ensure_ascii=False) for record in ordered],
        }

    def close(self) -> None:
        """Close the SDK client's connections (an actor's end does it too)."""
        run_sync(self._client.sdk_client.close)  # type: ignore[attr-defined]


MAX_DEFAULT_ACTORS = 16


def extract_dataset(
    dataset: Any,
    spec: ClientSpec,
    output_type: Any,
    *,
    actors: int | None = None,
    num_cpus: float = 0.25,
    batch_size: int = 32,
    id_column: str = "id",
    text_column: str = "text",
    instructions: str | None = None,
    options: Mapping[str, Any] | None = None,
) -> Any:
    """`dataset.map_batches(RayExtractor, ...)` on a pool of `actors`: a lazy `ray.data.Dataset` of results.

    `actors` defaults to what the cluster's CPUs hold, one CPU left for reading (at most 16);
    each actor reserves `num_cpus`. A pool that can never be scheduled raises `UserError`.

    Example:
        rows = extract_dataset(ray.data.from_items([{"id": "a", "text": "Ada, 36"}]), spec, Person).take_all()
    """
    import ray
    import ray.data

    if isinstance(num_cpus, bool) or not isinstance(num_cpus, (int, float)) or not 0 < num_cpus < float("inf"):
        raise UserError(f"num_cpus must be a positive number of CPUs per actor, not {num_cpus!r}")
    cpus = float(ray.cluster_resources().get("CPU", 0)) if ray.is_initialized() else None  # type: ignore[no-untyped-call]
    actors = _pool_size(actors, num_cpus, cpus)
    kwargs = {
        "id_column": id_column,
        "text_column": text_column,
        "instructions": instructions,
        "options": dict(options or {}),
    }
    return dataset.map_batches(
        RayExtractor,
        fn_constructor_args=(spec, output_type),
        fn_constructor_kwargs=kwargs,
        batch_size=batch_size,
        compute=ray.data.ActorPoolStrategy(min_size=1, max_size=actors),  # grows with the input: no idle actors
        num_cpus=num_cpus,
        batch_format="default",
    )


def _pool_size(actors: int | None, num_cpus: float, cpus: float | None) -> int:
    """The number of actors: as asked, if the cluster (`cpus`, None when unknown) can run them
    beside a read task of one CPU; by default, as many as fit (1 to 16)."""
    if actors is not None and (isinstance(actors, bool) or not isinstance(actors, int) or actors < 1):
        raise UserError(f"actors must be an int of at least 1, not {actors!r}")
    if cpus is None:
        return actors or 1
    fit = int((cpus - 1) / num_cpus + 1e-9)
    if actors is None:
        actors = max(1, min(MAX_DEFAULT_ACTORS, fit))
    if actors > fit:
        raise UserError(
            f"actors={actors} with num_cpus={num_cpus:g} each need {actors * num_cpus:g} CPUs, and Ray Data's read "
            f"stage needs 1 more, but the cluster has {cpus:g}: the pool would wait forever. "
            f"Pass actors={max(1, fit)} or fewer, or a smaller num_cpus (the actors wait on the network)"
            if fit >= 1
            else f"the cluster has {cpus:g} CPU(s): Ray Data's read stage needs 1 and no actor of num_cpus={num_cpus:g} "
            "fits beside it; start Ray with more CPUs (ray.init(num_cpus=2))"
        )
    return actors
