"""Every use of botocore's private names, in one place.

The Bedrock adapter's direct Converse path (`providers/bedrock/_direct.py`) writes the request
itself and hands it to the client's own machinery: its endpoint ruleset, user agent, request
signer, retries and error parsing. botocore publishes none of these on a client; they are read
here and nowhere else, and `tests/providers/bedrock/test_botocore_privates.py` fails, naming what
changed, when a botocore release moves one. Any of them missing: `client_machinery` is None and
the adapter calls `client.converse(**request)`.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

from ._own import owns_attribute, package_dir

__all__ = ["ClientMachinery", "client_machinery", "operation_without_output", "still_botocores"]


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
