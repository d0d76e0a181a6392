"""botocore's private names the Bedrock adapter's direct Converse path relies on (all read in
`so_middleware/providers/_botocore_privates.py`): when a botocore release changes one, these fail
and say which, instead of the adapter quietly going back to `client.converse` (or, worse, the
direct path drifting from what `_make_api_call` does)."""

from __future__ import annotations

import inspect
from typing import Any

import boto3
import botocore
import botocore.client
import pytest
from botocore.config import Config
from botocore.model import OperationModel
from botocore.utils import CachedProperty
from botocore.validate import ParamValidationDecorator

from so_middleware.providers import _botocore_privates as privates
from so_middleware.providers._own import owns_attribute, package_dir
from so_middleware.providers.bedrock._direct import DirectConverse


def client(**config: Any) -> Any:
    return boto3.client(
        "bedrock-runtime",
        region_name="us-east-1",
        aws_access_key_id="a",
        aws_secret_access_key="b",
        config=Config(**config),
    )


def test_a_plain_client_has_all_the_machinery() -> None:
    sdk = client()
    machinery = privates.client_machinery(sdk)
    assert machinery is not None, "a botocore client lost a name client_machinery reads"
    assert machinery.validates and isinstance(machinery.inject_host_prefix, bool)
    assert DirectConverse.for_client(sdk) is not None


@pytest.mark.parametrize(
    ("name", "parameters"),
    [
        ("_make_api_call", ["self", "operation_name", "api_params"]),
        ("_resolve_endpoint_ruleset", ["self", "operation_model", "params", "request_context"]),
        ("_make_request", ["self", "operation_model", "request_dict", "request_context"]),
    ],
)
def test_the_clients_private_methods_still_take_what_the_direct_path_passes(name: str, parameters: list[str]) -> None:
    found_method = getattr(botocore.client.BaseClient, name, None)
    assert found_method is not None, f"botocore.client.BaseClient lost {name}"
    method = inspect.unwrap(found_method)
    found = list(inspect.signature(method).parameters)
    assert found[: len(parameters)] == parameters, f"BaseClient.{name} now takes {found}"


def test_the_clients_private_attributes_are_still_there() -> None:
    sdk = client()
    for name in ("_request_signer", "_user_agent_creator", "_client_config", "_serializer"):
        assert hasattr(sdk, name), f"a botocore client lost {name}"
    assert callable(sdk._user_agent_creator.to_string)
    assert isinstance(sdk._client_config.inject_host_prefix, bool)
    assert isinstance(sdk._serializer, ParamValidationDecorator), "validation no longer wraps the serializer"
    assert not isinstance(client(parameter_validation=False)._serializer, ParamValidationDecorator)


def test_make_api_call_still_does_the_steps_the_direct_path_repeats() -> None:
    """`DirectConverse._call` repeats `_make_api_call` but for serializing and parsing: a step
    botocore adds or renames here needs the same in the direct path."""
    source = inspect.getsource(inspect.unwrap(botocore.client.BaseClient._make_api_call))
    for step in (
        "_emit_api_params",
        "_resolve_endpoint_ruleset",
        "_convert_to_request_dict",
        "resolve_checksum_context",
        "before-call.",
        "maybe_compress_request",
        "apply_request_checksum",
        "_make_request",
        "after-call.",
        "error_code_override",
        "from_code",
    ):
        assert step in source, f"BaseClient._make_api_call no longer has {step!r}"
    assert owns_attribute(client(), "_make_api_call", package_dir(botocore))


def test_an_operation_models_output_shape_is_still_cached_in_the_instance() -> None:
    for name in ("output_shape", "has_streaming_output", "has_event_stream_output"):
        assert type(vars(OperationModel).get(name)) is CachedProperty, f"OperationModel.{name} is no longer cached"
    operation = client().meta.service_model.operation_model("Converse")
    bare = privates.operation_without_output(operation)
    assert bare is not None and bare.output_shape is None and operation.output_shape is not None
    assert bare.name == "Converse" and [e.name for e in bare.error_shapes] == [e.name for e in operation.error_shapes]
    stream = client().meta.service_model.operation_model("ConverseStream")
    assert privates.operation_without_output(stream) is None  # its body is an event stream


def test_a_client_missing_a_name_has_no_machinery(monkeypatch: pytest.MonkeyPatch) -> None:
    sdk = client()
    monkeypatch.delattr(botocore.client.BaseClient, "_resolve_endpoint_ruleset")
    assert privates.client_machinery(sdk) is None
    assert DirectConverse.for_client(sdk) is None


def test_an_event_stream_still_has_the_parts_its_frames_are_read_with() -> None:
    """`event_stream_parts` reads `EventStream._raw_stream` (whose `stream()` botocore iterates),
    `_parser`, `_output_shape`, `_operation_name`, `_event_generator`, and the parser's
    `_blob_parser` (botocore's `_default_blob_parser`: base64)."""
    from botocore.eventstream import EventStream
    from botocore.parsers import EventStreamJSONParser, ResponseParser

    found = list(inspect.signature(EventStream.__init__).parameters)
    assert found == ["self", "raw_stream", "output_shape", "parser", "operation_name"], f"EventStream now takes {found}"
    assert "self._raw_stream.stream()" in inspect.getsource(EventStream._create_raw_event_generator), (
        "EventStream no longer reads its body with `_raw_stream.stream()`"
    )
    assert callable(getattr(ResponseParser, "_default_blob_parser", None)), "ResponseParser lost _default_blob_parser"
    assert ResponseParser._default_blob_parser(None, "AAE=") == b"\x00\x01"  # type: ignore[arg-type]

    class Body:
        def stream(self) -> Any:
            return iter(())

    shape = client().meta.service_model.operation_model("ConverseStream").output_shape.members["stream"]
    stream = EventStream(Body(), shape, EventStreamJSONParser(), "ConverseStream")
    parts = privates.event_stream_parts(stream)
    assert parts is not None, "a botocore EventStream lost a name event_stream_parts reads"
    assert parts.output_shape is shape and parts.operation_name == "ConverseStream"
