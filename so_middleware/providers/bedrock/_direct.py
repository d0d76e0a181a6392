"""`DirectConverse`: a Converse call that writes its request itself and reads a plain answer
with `wire.common.loads`, and leaves the rest to the boto3 client's own machinery.

It serves `converse` and `converse_stream` (whose events botocore reads, as before). A public
`client.converse(**request)` validates the request against the service model, walks
the model again to write it, resolves the endpoint ruleset, and walks the model a third time to
read the answer. Here one walk over a plan compiled once per client both writes the JSON body
(the bytes botocore's rest-json serializer writes) and checks what botocore's `ParamValidator`
checks (types, required members, one member of a union) and the ranges of the service model
(`min` and `max`; a value out of one is a `UserError` before any request). The endpoint is
resolved once: Converse's ruleset takes only Region, UseFIPS, UseDualStack and Endpoint, all fixed
by the client's region, config and `endpoint_url`, and the operation has no context parameters.
Everything else is the client's: the events (`provide-client-params`, `before-parameter-build`,
`before-call` with botocore's `Stubber`, `before-send`, `after-call`), its user agent, its
signer and credentials, its retries, and its error parsing: a non-2xx answer raises the
`ClientError` the public call raises.

A request the plan does not cover (a member the model lacks, a value of the wrong type, a
timestamp) goes through `client.converse` instead, so botocore reports it; so does every call of
a client botocore's private names no longer fit (`providers/_botocore_privates.py`), or whose
`converse`/`_make_api_call` is not botocore's own.
"""

from __future__ import annotations

import base64
import contextlib
import copy
import decimal
import json
import math
import re
from collections.abc import Mapping
from typing import Any

import botocore
from botocore import xform_name
from botocore.auth import resolve_auth_scheme_preference
from botocore.awsrequest import prepare_request_dict
from botocore.compress import maybe_compress_request
from botocore.context import get_context, start_as_current_context
from botocore.endpoint import convert_to_response_dict
from botocore.history import get_global_history_recorder
from botocore.httpchecksum import apply_request_checksum, resolve_checksum_context
from botocore.parsers import create_parser
from botocore.utils import percent_encode

from ...core import UserError
from ...wire.common import loads
from .._botocore_privates import ClientMachinery, client_machinery, operation_without_output, still_botocores
from .._own import owns_attribute, package_dir

__all__ = ["DirectConverse", "RequestNotCovered"]

_BOTOCORE_DIR = package_dir(botocore)
_SCALARS: dict[str, tuple[type, ...]] = {"string": (str,), "integer": (int,), "long": (int,), "boolean": (bool,)}
_NUMBERS = (int, float, decimal.Decimal)
_PATHS_KEPT = 256  # model ids whose request path is kept, per client


class RequestNotCovered(Exception):
    """The request holds something the compiled plan does not write: botocore's call does."""


class _Plan:
    """One shape, compiled: its kind, its range (`min`, `max`: a length for strings, lists and
    blobs; `lowest` and `highest` the same, unbounded where the model sets none), and its members (structure: name -> (serialized name,
    plan)) or element plan."""

    __slots__ = ("element", "high", "highest", "kind", "low", "lowest", "members", "path", "required", "union")

    def __init__(self, shape: Any, path: str) -> None:
        self.kind: str = shape.type_name
        self.path = path
        self.low = shape.metadata.get("min")
        self.high = shape.metadata.get("max")
        self.lowest = -math.inf if self.low is None else self.low
        self.highest = math.inf if self.high is None else self.high
        self.members: dict[str, tuple[str, _Plan]] = {}
        self.required: frozenset[str] = frozenset(shape.metadata.get("required", ()))
        self.union = bool(getattr(shape, "is_tagged_union", False))
        self.element: _Plan | None = None
        if self.kind == "structure" and getattr(shape, "is_document_type", False):
            self.kind = "document"


def _compile(shape: Any, path: str, seen: dict[str, _Plan]) -> _Plan:
    if shape.type_name == "structure" and shape.name in seen:
        return seen[shape.name]  # a recursive shape: its plan is being built
    plan = _Plan(shape, path)
    if plan.kind == "structure":
        seen[shape.name] = plan
        for name, member in shape.members.items():
            if member.serialization.get("location"):
                continue  # not in the body: the writer refuses it
            child = _compile(member, f"{path}.{name}" if path else name, seen)
            plan.members[name] = (member.serialization.get("name", name), child)
        del seen[shape.name]
    elif plan.kind == "list":
        plan.element = _compile(shape.member, f"{path}[]", seen)
    elif plan.kind == "map":
        plan.element = _compile(shape.value, f"{path}{{}}", seen)
    return plan


def _check_range(plan: _Plan, value: Any, measure: Any) -> None:
    low, high = plan.low, plan.high
    if (low is None or measure >= low) and (high is None or measure <= high):
        return
    what = "a length" if plan.kind in ("string", "list", "blob", "map") else "a value"
    bounds = f"from {low if low is not None else '-inf'} to {high if high is not None else 'inf'}"
    shown = measure if what == "a length" else value
    raise UserError(
        f"Amazon Bedrock: {plan.path} is {shown!r}, out of the service model's range ({what} {bounds}) "
        f"(field: {plan.path}). Fix: send {what} in that range"
    )


def _write_structure(plan: _Plan, value: Any, check: bool) -> dict[str, Any]:
    if type(value) is not dict and not isinstance(value, Mapping):
        raise RequestNotCovered(plan.path)
    if (plan.union and len(value) != 1) or (plan.required and not value.keys() >= plan.required):
        raise RequestNotCovered(plan.path)
    members = plan.members
    written: dict[str, Any] = {}
    for name, item in value.items():
        found = members.get(name)
        if found is None or item is None:
            raise RequestNotCovered(f"{plan.path}.{name}")
        key, child = found
        kind = child.kind
        if kind == "string" and type(item) is str:  # the most common member, written in place
            if check and not child.lowest <= len(item) <= child.highest:
                _check_range(child, item, len(item))
            written[key] = item
        elif kind == "structure":
            written[key] = _write_structure(child, item, check)
        else:
            written[key] = _write(child, item, check)
    return written


def _write(plan: _Plan, value: Any, check: bool) -> Any:
    """`value` as the JSON value botocore's rest-json serializer writes for `plan`'s shape,
    checked as its `ParamValidator` and the model's ranges check it (`check`)."""
    kind = plan.kind
    if kind == "structure":
        return _write_structure(plan, value, check)
    if kind == "list":
        if type(value) is not list and not isinstance(value, tuple):
            raise RequestNotCovered(plan.path)
        if check and not plan.lowest <= len(value) <= plan.highest:
            _check_range(plan, value, len(value))
        element = plan.element
        assert element is not None
        if element.kind == "structure":
            return [_write_structure(element, item, check) for item in value]
        return [_write(element, item, check) for item in value]
    if kind in _SCALARS:
        if (type(value) is bool and kind != "boolean") or not isinstance(value, _SCALARS[kind]):
            raise RequestNotCovered(plan.path)
        measure: Any = len(value) if isinstance(value, str) else value
        if check and kind != "boolean" and not plan.lowest <= measure <= plan.highest:
            _check_range(plan, value, measure)
        return value
    if kind == "document":
        return value
    if kind == "float" or kind == "double":
        if type(value) is bool or not isinstance(value, _NUMBERS):
            raise RequestNotCovered(plan.path)
        if check and not plan.lowest <= value <= plan.highest:
            _check_range(plan, value, value)
        number = float(value) if isinstance(value, decimal.Decimal) else value
        if math.isinf(number) or math.isnan(number):
            return "NaN" if math.isnan(number) else "Infinity" if number > 0 else "-Infinity"
        return number
    if kind == "blob":
        if not isinstance(value, (bytes, bytearray, str)):
            raise RequestNotCovered(plan.path)  # a file object: botocore reads it
        data = value.encode("utf-8") if isinstance(value, str) else value
        if check and not plan.lowest <= len(data) <= plan.highest:
            _check_range(plan, "...", len(data))
        return base64.b64encode(data).strip().decode("utf-8")
    if kind == "map":
        if not isinstance(value, Mapping):
            raise RequestNotCovered(plan.path)
        element = plan.element
        assert element is not None
        return {key: _write(element, item, check) for key, item in value.items()}
    raise RequestNotCovered(plan.path)  # a timestamp, or a kind new to botocore


class DirectConverse:
    """`converse` for one boto3 `bedrock-runtime` client, by the direct path when it can.

    Example: `DirectConverse.for_client(boto3.client("bedrock-runtime")).call(**request)`.
    """

    def __init__(self, sdk_client: Any, machinery: ClientMachinery, operation: Any, bare_operation: Any) -> None:
        meta = sdk_client.meta
        service_model = meta.service_model
        self.name: str = operation.name
        self.method_name = xform_name(self.name)  # converse, converse_stream
        self.public_method = getattr(type(sdk_client), self.method_name)
        self.sdk_client = sdk_client
        self.machinery = machinery
        self.operation = operation
        self.bare_operation = bare_operation
        self.service_id = service_model.service_id.hyphenize()
        self.service_name = service_model.service_name
        self.protocol = service_model.resolved_protocol
        self.check_ranges = machinery.validates
        prefix, _, suffix = operation.http["requestUri"].partition("{modelId}")
        self.uri = (prefix, suffix)
        self.method = operation.http.get("method", "POST")
        self.plan = _compile(operation.input_shape, "", {})
        self.paths: dict[str, str] = {}  # model id -> its percent-encoded request path
        self.model_plan = _compile(operation.input_shape.members["modelId"], "modelId", {})  # in the URL
        self.plan.required -= {"modelId"}
        blobs = "|".join(re.escape(name) for name in sorted(_blob_names(operation.output_shape)))
        self.answer_blobs = re.compile(f'"(?:{blobs})"'.encode() if blobs else rb"(?!)")  # the body names a blob
        self.event = f"{self.service_id}.{self.name}"
        config = meta.config
        if operation.auth and config.auth_scheme_preference:
            self.auth_type = resolve_auth_scheme_preference(config.auth_scheme_preference.split(","), operation.auth)
        else:
            self.auth_type = operation.resolved_auth_type
        self.auth_options = service_model.metadata.get("auth")
        self.endpoint: tuple[Any, ...] | None = None  # (url, headers, properties, context changes, features)
        self.history = get_global_history_recorder()

    @classmethod
    def for_client(cls, sdk_client: Any, operation_name: str = "Converse") -> DirectConverse | None:
        """The direct path of `operation_name` (Converse, ConverseStream) for `sdk_client`, or None
        when it cannot take it (a client that is not a plain botocore client, a botocore whose
        private names moved, an operation model of another form)."""
        machinery = client_machinery(sdk_client)
        if machinery is None or not owns_attribute(sdk_client, xform_name(operation_name), _BOTOCORE_DIR):
            return None
        operation = sdk_client.meta.service_model.operation_model(operation_name)
        streamed = operation.has_event_stream_output
        bare = None if streamed else operation_without_output(operation)  # a stream: botocore reads it all
        if (bare is None and not streamed) or (machinery.inject_host_prefix and operation.endpoint):
            return None
        uri = operation.http.get("requestUri", "")
        members = operation.input_shape.members
        located = {name for name, member in members.items() if member.serialization.get("location")}
        if uri.count("{") != 1 or "{modelId}" not in uri or located != {"modelId"} or "authPath" in operation.http:
            return None
        if any(
            getattr(operation, name, None)
            for name in ("static_context_parameters", "context_parameters", "operation_context_parameters")
        ):
            return None  # the endpoint would depend on the call
        if operation.output_shape is None or (
            not streamed and any(m.serialization.get("location") for m in operation.output_shape.members.values())
        ):
            return None
        return cls(sdk_client, machinery, operation, bare)

    def call(self, **request: Any) -> dict[str, Any]:
        """What `client.converse(**request)` (or `converse_stream`) returns, or raises."""
        client = self.sdk_client
        if not still_botocores(client, self.method_name, self.public_method, self.machinery.make_api_call):
            # a wrapper or a double put on it since: it sees every call
            return getattr(client, self.method_name)(**request)  # type: ignore[no-any-return]
        try:
            with start_as_current_context():
                return self._call(request)
        except RequestNotCovered:
            return getattr(client, self.method_name)(**request)  # type: ignore[no-any-return]

    def _call(self, api_params: dict[str, Any]) -> dict[str, Any]:
        client = self.sdk_client
        meta = client.meta
        operation = self.operation
        self.history.record("API_CALL", {"service": self.service_name, "operation": self.name, "params": api_params})
        context: dict[str, Any] = {
            "client_region": meta.region_name,
            "client_config": meta.config,
            "has_streaming_input": operation.has_streaming_input,
            "auth_type": self.auth_type,
            "unsigned_payload": operation.unsigned_payload,
            "auth_options": self.auth_options,
        }
        events = meta.events
        event = self.event
        answers = events.emit(f"provide-client-params.{event}", params=api_params, model=operation, context=context)
        api_params = next((answer for _, answer in answers if answer is not None), api_params)
        events.emit(f"before-parameter-build.{event}", params=api_params, model=operation, context=context)
        request_dict = self._request_dict(api_params)
        endpoint_url, headers, properties = self._endpoint(api_params, context)
        if properties:
            context["endpoint_properties"] = properties
        if headers:
            request_dict["headers"].update(headers)
        prepare_request_dict(
            request_dict, endpoint_url=endpoint_url, user_agent=self.machinery.user_agent(), context=context
        )
        resolve_checksum_context(request_dict, operation, api_params)
        _, stubbed = events.emit_until_response(
            f"before-call.{event}",
            model=operation,
            params=request_dict,
            request_signer=self.machinery.request_signer,
            context=context,
        )
        if stubbed is not None:
            http, parsed = stubbed
        else:
            maybe_compress_request(meta.config, request_dict, operation)
            apply_request_checksum(request_dict)
            http, parsed = self.machinery.make_request(self.bare_operation or operation, request_dict, context)
            if http.status_code < 300 and self.bare_operation is not None:
                parsed = self._answer(http, parsed)
        events.emit(f"after-call.{event}", http_response=http, parsed=parsed, model=operation, context=context)
        if http.status_code >= 300:
            code = context.get("error_code_override") or parsed.get("Error", {}).get("Code")
            raise client.exceptions.from_code(code)(parsed, self.name)
        return parsed  # type: ignore[no-any-return]

    def _request_dict(self, api_params: Mapping[str, Any]) -> dict[str, Any]:
        """The request dict botocore's serializer makes of `api_params` (Converse's: the model id
        in the path, the rest a JSON body)."""
        model_id = api_params.get("modelId")
        if not isinstance(model_id, str):
            raise RequestNotCovered("modelId")
        path = self.paths.get(model_id)
        if path is None:
            _write(self.model_plan, model_id, self.check_ranges)
            prefix, suffix = self.uri
            path = f"{prefix}{percent_encode(model_id)}{suffix}"
            if len(self.paths) < _PATHS_KEPT:
                self.paths[model_id] = path
        body = {key: value for key, value in api_params.items() if key != "modelId" and value is not None}
        written = _write_structure(self.plan, body, self.check_ranges)
        try:
            text = json.dumps(written)
        except (TypeError, ValueError) as error:  # a document botocore cannot write either
            raise RequestNotCovered(str(error)) from None
        return {
            "url_path": path,
            "query_string": {},
            "method": self.method,
            "headers": {"Content-Type": "application/json"},
            "body": text.encode("utf-8"),
        }

    def _endpoint(self, api_params: Mapping[str, Any], context: dict[str, Any]) -> tuple[Any, Any, Any]:
        """The client's ruleset answer, resolved on the first call and replayed after: what it
        wrote into `context` (auth type, signing) and the user-agent features it registered."""
        if self.endpoint is None:
            before = dict(context)
            features = set(get_context().features)
            url, headers, properties = self.machinery.resolve_endpoint(self.operation, api_params, context)
            changes = {key: value for key, value in context.items() if before.get(key, _ABSENT) is not value}
            added = set(get_context().features) - features
            self.endpoint = (url, dict(headers), properties, copy.deepcopy(changes), frozenset(added))
            return url, headers, properties
        url, headers, properties, changes, added = self.endpoint
        if changes:
            context.update({key: dict(value) if isinstance(value, dict) else value for key, value in changes.items()})
        if added:
            get_context().features.update(added)
        return url, dict(headers), properties

    def _answer(self, http: Any, parsed: dict[str, Any]) -> dict[str, Any]:
        """A 2xx answer: its JSON body read by `loads`, with the metadata botocore read (request
        id, status, headers, retries); botocore's parser when the body holds a blob (base64 in
        JSON, bytes in botocore's answer) or is not an object."""
        body = http.content
        answer = None
        if body and self.answer_blobs.search(body) is None:
            with contextlib.suppress(ValueError):  # not JSON: botocore's parser says so its own way
                answer = loads(body)
        if not isinstance(answer, dict):
            response = convert_to_response_dict(http, self.operation)
            answer = create_parser(self.protocol).parse(response, self.operation.output_shape)
        answer["ResponseMetadata"] = parsed["ResponseMetadata"]
        return answer


_ABSENT = object()


def _blob_names(shape: Any, seen: set[str] | None = None) -> set[str]:
    """The names of the members of `shape`, at any depth, that are blobs or timestamps (which
    botocore's parser turns into bytes and datetimes)."""
    seen = set() if seen is None else seen
    if shape is None or shape.name in seen:
        return set()
    seen.add(shape.name)
    names: set[str] = set()
    if shape.type_name == "structure" and not getattr(shape, "is_document_type", False):
        for name, member in shape.members.items():
            if member.type_name in ("blob", "timestamp"):
                names.add(member.serialization.get("name", name))
            names |= _blob_names(member, seen)
    elif shape.type_name == "list":
        names |= _blob_names(shape.member, seen)
    elif shape.type_name == "map":
        names |= _blob_names(shape.value, seen)
    return names
