"""`send`: a `chat.complete_async` / `chat.stream_async` request sent through the SDK's own request
path, without its pydantic models.

Those methods first build a request model from their keyword arguments and serialise it through a
model class made on each call, then read the answer (or each stream chunk) into more models. The
adapter's requests are JSON-ready dicts of wire fields already (the few defaults the SDK's models
write are added here) and `wire.mistral` reads the answer's JSON itself, so both are skipped:
the SDK still builds the HTTP request (server URL, auth, user agent, timeout) and sends it through
its hooks (its tracing included) and its async HTTP client, and an error status is the SDK's own
typed error, raised as those methods raise it. When a method was wrapped or replaced (an
instrumentation, a test double) or the caller set fields of their own (`extra_body`, which the SDK
validates and completes), the SDK's method is called instead, so nothing it would see is missed.
"""

from __future__ import annotations

import json
from typing import Any

import mistralai.client
from mistralai.client import errors, models, utils

try:  # what the SDK's generated methods use to send: where a release moved it, those methods are called
    from mistralai.client._hooks import HookContext
    from mistralai.client.utils import eventstreaming, get_security_from_env
    from mistralai.client.utils.unmarshal_json_response import unmarshal_json_response

    _SENDS = True
except ImportError:  # pragma: no cover - mistralai 3.7 has them all
    _SENDS = False

from ...wire.common import JSONView
from .._bridge import kept_body, unreadable
from .._openai_privates import mistral_build_request
from .._own import owns_attribute, package_dir

__all__ = ["can_send", "send"]

_SDK_DIR = package_dir(mistralai.client)
# Arguments of the SDK's methods that are not body fields (the adapter sets `retries` and `timeout_ms`).
_CALL_ARGUMENTS = frozenset({"retries", "server_url", "timeout_ms", "http_headers"})
_DEFAULT_TIMEOUT_MS = 300000  # the SDK's own, when neither the call nor the client sets one
_PATH = "/v1/chat/completions"


def can_send(chat: Any, name: str) -> bool:
    """Whether `send` may stand in for `chat.<name>`: that is the SDK's own function (looked up on
    the object, then its class, as `inspect.getattr_static` does; a plain function whose source is
    in the SDK's package: `type`, not `isinstance`, as a wrapt proxy passes for the function it
    wraps), and the SDK still has the request builder `send` uses."""
    if not _SENDS or mistral_build_request(chat) is None:
        return False
    return owns_attribute(chat, name, _SDK_DIR)


def _completed(message: dict[str, Any]) -> dict[str, Any]:
    """An assistant message with the defaults the SDK's model writes (`prefix`, each call's `index`)."""
    completed = {**message, "prefix": message.get("prefix", False)}
    calls = message.get("tool_calls")
    if calls:
        completed["tool_calls"] = [{**call, "index": call.get("index", 0)} for call in calls]  # the SDK's 0 for each
    return completed


def _decoded(raw: str) -> Any:
    """One event of a stream (the SDK's parser hands it as `{"data": <chunk>}` JSON): its chunk."""
    chunk = json.loads(raw).get("data")
    if not isinstance(chunk, dict):
        raise unreadable("a stream event is not a JSON object").with_answer(kept_body(raw))
    return JSONView(chunk)


async def send(chat: Any, request: dict[str, Any], *, stream: bool) -> Any:
    """Send `request` (the keyword arguments of `chat.complete_async`) as that method would: the
    answer's JSON, or with `stream` an `EventStreamAsync` of each chunk's JSON (each a `JSONView`,
    read by attribute as the SDK's objects are)."""
    config = chat.sdk_configuration
    body = {name: value for name, value in request.items() if name not in _CALL_ARGUMENTS}
    body["messages"] = [
        _completed(message) if message["role"] == "assistant" else message for message in body["messages"]
    ]
    body["stream"] = stream
    content = json.dumps(body, separators=(",", ":"))  # as the SDK serialises its request model
    timeout_ms = request.get("timeout_ms")
    timeout_ms = timeout_ms if timeout_ms is not None else config.timeout_ms
    timeout_ms = timeout_ms if timeout_ms is not None else _DEFAULT_TIMEOUT_MS
    base_url = utils.template_url(*config.get_server_details())  # as the SDK's methods find it
    http_request = mistral_build_request(chat)(
        method="POST",
        path=_PATH + "#stream" if stream else _PATH,
        base_url=base_url,
        url_variables=None,
        request=None,
        request_body_required=True,
        request_has_path_params=False,
        request_has_query_params=True,
        user_agent_header="user-agent",
        accept_header_value="text/event-stream" if stream else "application/json",
        http_headers=None,
        security=config.security,
        get_serialized_body=lambda: utils.SerializedRequestBody("application/json", content),
        allow_empty_value=None,
        timeout_ms=timeout_ms,
    )
    hook_context = HookContext(
        config=config,
        base_url=base_url or "",
        operation_id="stream_chat" if stream else "chat_completion_v1_chat_completions_post",
        oauth2_scopes=None,
        security_source=get_security_from_env(config.security, models.Security),
        tags=["chat"],
        extensions=None,
    )
    response = await chat.do_request_async(
        hook_ctx=hook_context,
        request=http_request,
        is_error_status_code=lambda code: utils.match_status_codes(["4XX", "5XX"], code),
        stream=stream,
        retry_config=None,  # the adapter turns the SDK's retries off for each call
    )
    if stream and utils.match_response(response, "200", "text/event-stream"):
        return eventstreaming.EventStreamAsync(response, _decoded, sentinel="[DONE]", client_ref=chat)
    if not stream and utils.match_response(response, "200", "application/json"):
        try:
            return JSONView(json.loads(response.content))
        except ValueError as error:  # the body is kept, as for every adapter's unreadable answer
            raise unreadable("the body is not valid JSON text", error).with_answer(kept_body(response.text)) from error
    raise await _error(response, read=stream)


async def _error(response: Any, *, read: bool) -> Exception:
    """The SDK's own error for an answer that is not a success, as its chat methods make it."""
    if utils.match_response(response, "422", "application/json"):
        text = await utils.stream_to_text_async(response) if read else None
        data = unmarshal_json_response(errors.HTTPValidationErrorData, response, text)
        return errors.HTTPValidationError(data, response, text) if read else errors.HTTPValidationError(data, response)
    if utils.match_response(response, ["4XX", "5XX"], "*"):
        return errors.SDKError("API error occurred", response, await utils.stream_to_text_async(response))
    if read:
        return errors.SDKError("Unexpected response received", response, await utils.stream_to_text_async(response))
    return errors.SDKError("Unexpected response received", response)
