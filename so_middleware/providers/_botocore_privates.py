"""Every use of botocore's private names, in one place.

The Bedrock adapter's direct Converse path (`providers/bedrock/_direct.py`) writes the request
itself and hands it to the client's own machinery: its endpoint ruleset, user agent, request
signer, retries and error parsing. botocore publishes none of these on a client; they are read
here and nowhere else, and `tests/providers/bedrock/test_botocore_privates.py` fails, naming what
changed, when a botocore release moves one. Any of them missing: `client_machinery` is None and
the adapter calls `client.converse(**request)`. Likewise a ConverseStream's `EventStream`: its
body, parser and shapes are read here (`event_stream_parts`) so the adapter can read its frames
itself; any of them missing, it iterates the `EventStream`.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

from ._own import owns_attribute, package_dir

__all__ = [
    "ClientMachinery",
    "EventStreamParts",
    "client_machinery",
    "event_stream_parts",
    "operation_without_output",
    "still_botocores",
]


@dataclass(frozen=True)
class ClientMachinery:
    """What a botocore client's `_make_api_call` uses beside its serializer and validator.

    `resolve_endpoint(operation_model, params, request_context)` is the client's ruleset
    resolution (URL, headers, properties; it writes the signing context into `request_context`),
    `user_agent()` its User-Agent header, `make_request(operation_model, request_dict,
    request_context)` its send (signing, `before-send`, retries, parsing), `request_signer` the
    signer `before-call` handlers receive, `inject_host_prefix` its config's flag, `validates`
    whether its serializer checks parameters (`Config(parameter_validation=False)` or a profile's
    `parameter_validation = false` turn that off; the client's config keeps neither),
    `make_api_call` the function its class runs for every operation.
    """

    resolve_endpoint: Any
    user_agent: Any
    make_request: Any
    request_signer: Any
    inject_host_prefix: bool
    validates: bool
    make_api_call: Any


def client_machinery(sdk_client: Any) -> ClientMachinery | None:
    """The machinery of a plain botocore client whose `_make_api_call` is botocore's own (not a
    wrapper an instrumentation put on it, not a test double); None otherwise or when botocore
    moved a name."""
    import botocore
    from botocore.validate import ParamValidationDecorator

    if not owns_attribute(sdk_client, "_make_api_call", package_dir(botocore)):
        return None
    try:
        resolve = sdk_client._resolve_endpoint_ruleset
        user_agent = sdk_client._user_agent_creator.to_string
        make_request = sdk_client._make_request
        signer = sdk_client._request_signer
        inject_host_prefix = sdk_client._client_config.inject_host_prefix
        serializer = sdk_client._serializer
        make_api_call = type(sdk_client)._make_api_call
    except AttributeError:
        return None
    if not all(callable(method) for method in (resolve, user_agent, make_request)) or signer is None:
        return None
    if not isinstance(inject_host_prefix, bool) or serializer is None:
        return None
    validates = isinstance(serializer, ParamValidationDecorator)
    return ClientMachinery(resolve, user_agent, make_request, signer, inject_host_prefix, validates, make_api_call)


def still_botocores(sdk_client: Any, method_name: str, method: Any, make_api_call: Any) -> bool:
    """Whether `sdk_client.<method_name>` and its `_make_api_call` are still `method` and
    `make_api_call` (botocore's own, found when the direct path was built): nothing patched on the
    client or its classes since (an instrumentation, a test double), which would then see every call."""
    own = sdk_client.__dict__
    klass = type(sdk_client)
    return (
        method_name not in own
        and "_make_api_call" not in own
        and getattr(klass, method_name, None) is method
        and klass._make_api_call is make_api_call
    )


def operation_without_output(operation_model: Any) -> Any:
    """A copy of a botocore `OperationModel` whose `output_shape` is None: the client's parser
    then reads a 2xx answer's metadata (request id, status, headers, retries) and leaves its
    body to the caller, and still parses an error in full. botocore caches `output_shape` in the
    instance's `__dict__` (its `CachedProperty` is a non-data descriptor): None when it no longer
    does."""
    from botocore.model import OperationModel
    from botocore.utils import CachedProperty

    shapes = ("output_shape", "has_streaming_output", "has_event_stream_output")
    if type(operation_model) is not OperationModel or not all(
        type(vars(OperationModel).get(name)) is CachedProperty for name in shapes
    ):
        return None
    if operation_model.has_streaming_output or operation_model.has_event_stream_output:
        return None  # its body is a stream: only botocore reads it
    clone = copy.copy(operation_model)
    vars(clone)["output_shape"] = None
    return clone


@dataclass(frozen=True)
class EventStreamParts:
    """What a botocore `EventStream` reads its events with: `body` (urllib3's `HTTPResponse`; its
    `stream()` gives the bytes as they come, `shutdown()` cuts a read), `parser` (its
    `EventStreamJSONParser`: `parse({"status_code", "headers", "body"}, output_shape)`),
    `output_shape` (the event stream's union shape), `operation_name` (for `EventStreamError`)."""

    body: Any
    parser: Any
    output_shape: Any
    operation_name: str


def event_stream_parts(stream: Any) -> EventStreamParts | None:
    """The parts of a botocore `EventStream` no event has been read from yet, whose parser reads blobs
    as base64 (botocore's default); None otherwise or when botocore moved a name."""
    import inspect

    from botocore.eventstream import EventStream
    from botocore.parsers import ResponseParser

    if type(stream) is not EventStream:
        return None
    try:
        body = stream._raw_stream
        parser = stream._parser
        output_shape = stream._output_shape
        operation_name = stream._operation_name
        generator = stream._event_generator
        blob_parser = parser._blob_parser
    except AttributeError:
        return None
    if not inspect.isgenerator(generator) or inspect.getgeneratorstate(generator) != inspect.GEN_CREATED:
        return None  # an event was read (an initial response): its buffer holds bytes we cannot see
    if not callable(getattr(body, "stream", None)) or not callable(getattr(parser, "parse", None)):
        return None
    if getattr(blob_parser, "__func__", None) is not ResponseParser._default_blob_parser:
        return None
    if output_shape is None or not isinstance(operation_name, str):
        return None
    return EventStreamParts(body, parser, output_shape, operation_name)
