"""`json_create`: `messages.create` through its raw-response twin, the answer read as JSON.

`create` reads every answer into the SDK's `Message` model, type by type, which costs about a
third of a plain call; the wire codec reads the answer's JSON as well through a `MessageView`.
The request still goes through `create` (its arguments, timeouts, warnings and spans), so the SDK
does auth, base URL, headers, retries, timeouts and its typed HTTP errors; its raw-response twin
only adds the `X-Stainless-Raw-Response` header, as the streamed path already does.

When `create` is not the SDK's own (OpenTelemetry's Anthropic instrumentation, a test double) or
the client validates answers strictly, the adapter calls `create` as it is, so those still see or
check every call.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import anthropic
import jiter

from ...wire.common import JSONView
from .._own import owns_attribute, package_dir

__all__ = ["MessageView", "json_create"]

_ANTHROPIC_DIR = package_dir(anthropic)


class MessageView(JSONView):
    """A Messages answer read by attribute (see `JSONView`), standing for the SDK's `Message`:
    `view.content[0].text`, `view.usage.output_tokens`."""

    __slots__ = ()

    def model_dump_json(self, **_: Any) -> str:
        """The answer's JSON (what an unusable answer's error keeps)."""
        return json.dumps(self.to_dict())


def json_create(sdk_client: Any, resource: Any, *, is_async: bool) -> Callable[..., Any] | None:
    """What sends `resource.create(...)` (`resource` is `sdk_client.messages`) and answers a
    `MessageView` (or the body's text, or another JSON value, as `create` would hand them back);
    None when `create` must be called as it is (see the module's docstring)."""
    if getattr(sdk_client, "_strict_response_validation", False) or not _is_the_sdks_own_create(resource):
        return None
    raw = resource.with_raw_response.create

    async def create_async(**kwargs: Any) -> Any:
        return _answer(await raw(**kwargs))

    def create_sync(**kwargs: Any) -> Any:
        return _answer(raw(**kwargs))

    return create_async if is_async else create_sync


def _answer(raw: Any) -> Any:
    """The answer of a raw response, read as `create` reads it for a model: a body of a JSON
    content type must be JSON (a decoding error raises as the SDK's does); another body is read as
    JSON when it is, else handed back as text. `jiter` reads UTF-8 JSON first, faster than the
    SDK's `json.loads`; what it refuses is read the SDK's way."""
    response = raw.http_response
    try:
        data = jiter.from_json(response.content, cache_mode="keys")
    except ValueError:  # read again as the SDK reads it: its own error, or a text other decodings accept
        content_type = response.headers.get("content-type", "*").split(";")[0]
        if content_type.lower().endswith("json"):
            data = response.json()
        else:
            try:
                data = response.json()
            except ValueError:
                return response.text
    return MessageView(data) if isinstance(data, dict) else data


def _is_the_sdks_own_create(resource: Any) -> bool:
    """Whether `resource.create` is the SDK's own function (not a wrapper or a patch)."""
    return owns_attribute(resource, "create", _ANTHROPIC_DIR)
