"""`SDKPost`: an OpenAI SDK `create` sent through the client's documented `post` method.

`create` first walks its keyword arguments against the parameter types (the SDK's request
transform: aliases, dates, files), which costs about as much as the rest of a non-streaming call.
The adapters' requests are JSON-ready dicts of wire fields already, on which that walk changes
nothing, so they go to `client.post(path, body=...)` instead: the SDK still does auth, base URL,
headers, retries, timeouts, HTTP errors as its typed errors, and reads the body into its own
response type, exactly as `create` does.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ._openai_privates import is_the_sdks_own, request_options_know_security

__all__ = ["CreateCalls", "SDKPost", "create_call"]


class CreateCalls:
    """What sends an adapter's `create` on `path`: `create_call`'s answer for each call's SDK
    client, the last `SDKPost` kept for the next call on the same client."""

    def __init__(self, path: str, cast_to: type, *, is_async: bool) -> None:
        self.path, self.cast_to, self.is_async = path, cast_to, is_async
        self._last: SDKPost | None = None

    def __call__(self, sdk_client: Any, resource: Any) -> Callable[..., Any]:
        last = self._last
        if last is not None and last.sdk_client is sdk_client and _is_the_sdks_own_create(resource):
            return last
        call = create_call(sdk_client, resource, self.path, self.cast_to, is_async=self.is_async)
        self._last = call if isinstance(call, SDKPost) else None
        return call


def create_call(sdk_client: Any, resource: Any, path: str, cast_to: type, *, is_async: bool) -> Callable[..., Any]:
    """What sends `resource.create(...)` (`resource` is e.g. `sdk_client.chat.completions`): an
    `SDKPost` on `sdk_client`, or the bound `create` itself when something wrapped or replaced it
    (OpenTelemetry's or Langfuse's OpenAI instrumentation, a test double), so that wrapper still
    sees every call."""
    if not _is_the_sdks_own_create(resource):
        return resource.create  # type: ignore[no-any-return]
    return SDKPost(sdk_client, path, cast_to, is_async=is_async)


_ABSENT: Any = object()


def _is_the_sdks_own_create(resource: Any) -> bool:
    """Whether `resource.create` is the SDK's own function: looked up as `inspect.getattr_static`
    does for a plain object (its own attributes, then its class's), without that function's cost
    on every call."""
    found = getattr(resource, "__dict__", {}).get("create", _ABSENT)  # a patch on the object itself
    if found is _ABSENT:
        found = next((klass.__dict__["create"] for klass in type(resource).__mro__ if "create" in klass.__dict__), None)
    return is_the_sdks_own(found)


_NOT_GIVEN: Any = object()
_SECURITY: dict[str, Any] | None = {"bearer_auth": True} if request_options_know_security() else None


class SDKPost:
    """`create(**kwargs)` for the endpoint at `path`, as `sdk.post`: `extra_headers`,
    `extra_query`, `extra_body` and `timeout` become the request options `create` makes of them,
    every other argument is a body field. The result is a `cast_to` object, or with `stream=True`
    the SDK's stream object, whose `.response` is the unread HTTP response."""

    def __init__(self, sdk_client: Any, path: str, cast_to: type, *, is_async: bool) -> None:
        self.sdk_client = sdk_client
        self.path = path
        self.cast_to = cast_to
        self.is_async = is_async

    def __call__(
        self,
        *,
        extra_headers: Any = None,
        extra_query: Any = None,
        extra_body: Any = None,
        timeout: Any = _NOT_GIVEN,
        **body: Any,
    ) -> Any:
        options: dict[str, Any] = {}
        if extra_headers is not None:
            options["headers"] = extra_headers
        if extra_query is not None:
            options["params"] = extra_query
        if extra_body is not None:
            options["extra_json"] = extra_body
        if timeout is not _NOT_GIVEN:  # None is no timeout at all, as for `create`
            options["timeout"] = timeout
        if _SECURITY is not None:
            options["security"] = _SECURITY
        stream = bool(body.get("stream"))
        if not stream:
            return self.sdk_client.post(self.path, body=body, options=options, cast_to=self.cast_to)
        import openai

        stream_cls = openai.AsyncStream[Any] if self.is_async else openai.Stream[Any]
        return self.sdk_client.post(
            self.path, body=body, options=options, cast_to=self.cast_to, stream=True, stream_cls=stream_cls
        )
