"""`POST /v1/responses/compact` on a Chat Completions backend: the window kept whole in one opaque item.

A Chat Completions backend has no compaction of its own, and a summary asked of it could lose what
the client needs (a small local model drops facts) or fail on input the backend refuses. So the
gateway compacts without a model call: the `compaction` item holds the window (the previous
response's input and output, then `input`; see `_window`), and a request that sends the item back
has it expanded in place into those items before anything else reads the input; the backend sees
the conversation as it was.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from ...wire.responses import WireError
from .._errors import BadRequest
from .._request import input_items, is_reference
from .._response import is_response_id, new_id
from ._window import packed

if TYPE_CHECKING:
    from .._store import ResponseStore

__all__ = ["compact", "resolved"]


async def resolved(items: list[dict[str, Any]], owner: str, store: ResponseStore) -> list[dict[str, Any]]:
    """The input with each `item_reference` replaced by the item it names, from this owner's stored
    responses (what a client that stores, as the AI SDK does by default, sends back); 400 naming it if none."""
    out = list(items)
    for index, item in enumerate(items):
        if is_reference(item):
            found = await store.find_item(item["id"], owner)
            if found is None:
                raise BadRequest(f"Item with id '{item['id'][:200]}' not found.", f"input[{index}].id")
            out[index] = found
    return out


async def compact(body: Any, owner: str, store: ResponseStore) -> dict[str, Any]:
    """The `response.compaction` object for a compact request's body (already decoded): one
    `compaction` item holding the window, usable as the base `input` of a new response. A 400 naming
    the field for a body without `model`, a bad item, or an unknown `previous_response_id`."""
    if not isinstance(body, dict):
        raise BadRequest("The request body must be a JSON object.", None)
    if not isinstance(body.get("model"), str) or not body["model"]:
        raise BadRequest("model is required", "model")
    window: list[dict[str, Any]] = []
    previous_id = body.get("previous_response_id")
    if previous_id is not None:
        if not isinstance(previous_id, str):
            raise BadRequest("previous_response_id must be a string", "previous_response_id")
        previous = await store.get(previous_id, owner) if is_response_id(previous_id) else None
        if previous is None:
            raise BadRequest(f"Previous response with id '{previous_id[:200]}' not found.",
                             "previous_response_id", 404)  # fmt: skip
        window = previous.input_items + previous.response["output"]
    try:
        items = input_items(body.get("input"))
    except WireError as error:
        raise BadRequest(str(error), error.param) from None
    window += await resolved(items, owner, store)
    item = {"id": new_id("cmp"), "type": "compaction", "encrypted_content": packed(window)}
    usage = {"input_tokens": 0, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 0,
             "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 0}  # fmt: skip
    return {"id": new_id("resp"), "object": "response.compaction", "created_at": int(time.time()),
            "output": [item], "usage": usage}  # fmt: skip
