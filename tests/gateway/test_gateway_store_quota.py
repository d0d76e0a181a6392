"""The in-memory store is bounded per client key as well as in all: one key filling it evicts its
own oldest responses, never another key's (docs/how-to/gateway.md, "Storage")."""

from __future__ import annotations

from typing import Any

import anyio
import openai
import pytest

from so_middleware import UserError
from so_middleware.gateway import GatewayConfig, SQLiteStore
from so_middleware.gateway._cli import parser

KEY_A, KEY_B = "key-a-0123456789", "key-b-9876543210"


def _ids(count: int, prefix: str) -> list[str]:
    return [f"resp_{prefix}{n}" for n in range(count)]


async def _kept(store: SQLiteStore, ids: list[str], owner: str) -> list[str]:
    return [response_id for response_id in ids if await store.get(response_id, owner) is not None]


def test_a_key_filling_its_quota_evicts_its_own_oldest_never_another_keys() -> None:
    async def scenario() -> None:
        store = SQLiteStore(":memory:", max_responses=10, max_per_key=4)
        await store.open()
        try:
            quiet, noisy = _ids(3, "b"), _ids(50, "a")
            for response_id in quiet:
                await store.put({"id": response_id}, [], "owner-b")
            for response_id in noisy:
                await store.put({"id": response_id}, [], "owner-a")
            assert await _kept(store, quiet, "owner-b") == quiet
            assert await _kept(store, noisy, "owner-a") == noisy[-4:]  # its newest, up to its quota
        finally:
            await store.close()

    anyio.run(scenario)


def test_a_key_that_overflows_the_whole_store_pays_with_its_own_oldest_first() -> None:
    async def scenario() -> None:
        store = SQLiteStore(":memory:", max_responses=5, max_per_key=5)
        await store.open()
        try:
            b, c, a = _ids(3, "b"), _ids(2, "c"), _ids(4, "a")
            for owner, ids in (("owner-b", b), ("owner-c", c), ("owner-a", a)):
                for response_id in ids:
                    await store.put({"id": response_id}, [], owner)
            # 9 written, 5 kept: a's first write found the store full with others' only, so the oldest of
            # all went (b0); each later write of a's dropped a's own oldest
            assert await _kept(store, b, "owner-b") == b[1:]
            assert await _kept(store, c, "owner-c") == c
            assert await _kept(store, a, "owner-a") == a[-1:]
        finally:
            await store.close()

    anyio.run(scenario)


def test_one_keys_flood_of_the_gateways_memory_store_leaves_another_keys_responses(fake_gateway: Any) -> None:
    _, gateway = fake_gateway(api_keys=[KEY_A, KEY_B], memory_store_size=20, memory_store_per_key=5)
    a = openai.OpenAI(base_url=gateway.base_url, api_key=KEY_A, max_retries=0, timeout=30)
    b = openai.OpenAI(base_url=gateway.base_url, api_key=KEY_B, max_retries=0, timeout=30)
    kept = [b.responses.create(model="m", input="keep me").id for _ in range(3)]
    flood = [a.responses.create(model="m", input="flood").id for _ in range(12)]
    assert [b.responses.retrieve(response_id).id for response_id in kept] == kept
    assert a.responses.retrieve(flood[-1]).id == flood[-1]
    with pytest.raises(openai.NotFoundError):
        a.responses.retrieve(flood[0])  # past its key's quota of 5
    a.close()
    b.close()


def test_the_documented_per_key_default_and_its_checks() -> None:
    assert parser().parse_args([]).memory_store_per_key == 1000  # docs: "`--memory-store-per-key` | 1,000"
    assert GatewayConfig(backend_url="x").memory_store_per_key == 1000
    assert parser().parse_args(["--memory-store-per-key", "7"]).memory_store_per_key == 7
    with pytest.raises(SystemExit):
        parser().parse_args(["--memory-store-per-key", "0"])
    with pytest.raises(UserError, match="memory_store_per_key"):
        GatewayConfig(backend_url="x", memory_store_per_key=2.5)  # type: ignore[arg-type]
    with pytest.raises(UserError, match="max_per_key"):
        SQLiteStore(max_per_key=0)
