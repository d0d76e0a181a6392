"""The REST request `models.generate_content` sends for the adapter's keyword arguments, made directly.

For each call the SDK validates its arguments into `GenerateContentConfig` and
`_GenerateContentParameters` models, walks them into the REST body (camelCase names, fields moved
out of the config) and dumps the nested models back to dicts: about half a call's CPU, spent on
arguments that are plain JSON already. `rest_request` writes the same body for the fields the
codec (`so_middleware.wire.gemini.request_to_wire`) sends, field for field and in the SDK's order,
on both routes (the Gemini Developer API and Vertex AI, which differ in the model's path and in one
nested spelling). Anything else (a config field or a part of another kind, a value the SDK would
convert) is None: the adapter then calls the SDK's own `generate_content`, which sends it as the
SDK does. The tests compare the bytes sent with the SDK's own call's.
"""

from __future__ import annotations

import base64
import re
from typing import Any

__all__ = ["rest_request"]


class _Elsewhere(Exception):
    """A request this module does not write: the SDK's own call sends it."""


# generationConfig's fields in the order the SDK writes them, with their wire names and kinds.
_GENERATION: tuple[tuple[str, str, type], ...] = (
    ("temperature", "temperature", float),
    ("top_p", "topP", float),
    ("top_k", "topK", float),
    ("candidate_count", "candidateCount", int),
    ("max_output_tokens", "maxOutputTokens", int),
    ("stop_sequences", "stopSequences", list),
    ("presence_penalty", "presencePenalty", float),
    ("frequency_penalty", "frequencyPenalty", float),
    ("seed", "seed", int),
    ("response_mime_type", "responseMimeType", str),
    ("response_json_schema", "responseJsonSchema", dict),
)
# Read by the SDK itself, never sent; `system_instruction`, `tools` and `tool_config` go beside
# `generationConfig`.
_KNOWN = frozenset({name for name, _, _ in _GENERATION} | {"system_instruction", "tools", "tool_config",
                                                           "http_options", "automatic_continuation"})  # fmt: skip
_PART_KEYS = frozenset({"text", "thought", "thought_signature", "function_call", "function_response",
                        "inline_data", "file_data"})  # fmt: skip
_MODES = frozenset({"AUTO", "ANY", "NONE"})
# Standard base64 as the API writes bytes: the SDK reads it into bytes and sends them URL-safe.
_BASE64 = re.compile(r"(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?")


def rest_request(request: dict[str, Any], *, vertex: bool) -> tuple[str, dict[str, Any]] | None:
    """The model's path (`models/...` or `publishers/.../models/...`, before `:generateContent`)
    and the JSON body the SDK's `generate_content(**request)` sends on that route; None for a
    request with anything this module does not write.

    Example: `rest_request({"model": "m", "contents": [...], "config": {"temperature": 0}}, vertex=False)`
    gives `("models/m", {"contents": [...], "generationConfig": {"temperature": 0.0}})`."""
    try:
        path = _model_path(request["model"], vertex)
        config = request.get("config") or {}
        if (
            not request.keys() <= {"model", "contents", "config"}
            or type(config) is not dict
            or not config.keys() <= _KNOWN
        ):
            return None
        if config.get("automatic_continuation") not in (None, True, False):
            return None
        contents = request["contents"]
        if type(contents) is not list or not contents:
            return None
        body: dict[str, Any] = {"contents": [_content(content) for content in contents]}
        system = config.get("system_instruction")
        if system is not None:
            body["systemInstruction"] = _content(system)
        tools = config.get("tools")
        if tools is not None:
            body["tools"] = _tools(tools)
        tool_config = config.get("tool_config")
        if tool_config is not None:
            body["toolConfig"] = _tool_config(tool_config, vertex)
        if config:  # the SDK sends a config it was given, even one of no generation field
            body["generationConfig"] = _generation(config)
    except _Elsewhere:
        return None
    return path, body


def _model_path(model: Any, vertex: bool) -> str:
    """`t_model` of the SDK: the model's resource name on the route."""
    if type(model) is not str or not model or ".." in model or "?" in model or "&" in model or "{" in model:
        raise _Elsewhere
    if vertex:
        if model.startswith(("projects/", "models/", "publishers/")):
            return model
        if "/" in model:
            publisher, name = model.split("/", 1)
            return f"publishers/{publisher}/models/{name}"
        return f"publishers/google/models/{model}"
    return model if model.startswith(("models/", "tunedModels/")) else f"models/{model}"


def _generation(config: dict[str, Any]) -> dict[str, Any]:
    generation: dict[str, Any] = {}
    for name, wire, kind in _GENERATION:
        value: Any = config.get(name)
        if value is None:
            continue
        if kind is float and type(value) is int:
            value = float(value)  # the SDK's model holds a float: 0 is sent as 0.0
        elif type(value) is not kind:
            raise _Elsewhere
        if kind is list and not all(type(item) is str for item in value):
            raise _Elsewhere
        generation[wire] = value
    return generation


def _content(content: Any) -> dict[str, Any]:
    if type(content) is not dict or not content.keys() <= {"role", "parts"} or type(content.get("parts")) is not list:
        raise _Elsewhere
    wire: dict[str, Any] = {"parts": [_part(part) for part in content["parts"]]}
    role = content.get("role")
    if role is not None:
        if type(role) is not str:
            raise _Elsewhere
        wire["role"] = role
    return wire


def _part(part: Any) -> dict[str, Any]:
    """A part in the SDK's order of fields; nested objects keep the SDK's own (snake_case) keys."""
    if type(part) is not dict or not part.keys() <= _PART_KEYS:
        raise _Elsewhere
    wire: dict[str, Any] = {}
    found = part.get("file_data")
    if found is not None:
        wire["fileData"] = _fields(found, ("file_uri", str), ("mime_type", str))
    found = part.get("function_call")
    if found is not None:
        wire["functionCall"] = _fields(found, ("id", str), ("args", dict), ("name", str))
    found = part.get("function_response")
    if found is not None:
        wire["functionResponse"] = _fields(found, ("id", str), ("name", str), ("response", dict))
    found = part.get("inline_data")
    if found is not None:
        data = found.get("data") if type(found) is dict else None
        if type(data) is not bytes:
            raise _Elsewhere
        blob = _fields({**found, "data": ""}, ("data", str), ("mime_type", str))
        wire["inlineData"] = {**blob, "data": base64.urlsafe_b64encode(data).decode("ascii")}
    for name, wire_name, kind in (("text", "text", str), ("thought", "thought", bool)):
        found = part.get(name)
        if found is not None:
            if type(found) is not kind:
                raise _Elsewhere
            wire[wire_name] = found
    signature = part.get("thought_signature")
    if signature is not None:
        wire["thoughtSignature"] = _bytes(signature)
    return wire


def _fields(value: Any, *fields: tuple[str, type]) -> dict[str, Any]:
    """A nested object's fields in the SDK model's order, those that are set, each of its kind."""
    if type(value) is not dict or not value.keys() <= {name for name, _ in fields}:
        raise _Elsewhere
    wire: dict[str, Any] = {}
    for name, kind in fields:
        found = value.get(name)
        if found is not None:
            if type(found) is not kind:
                raise _Elsewhere
            wire[name] = found
    return wire


def _bytes(value: Any) -> str:
    """Bytes as the SDK sends them (URL-safe base64): given as bytes or as standard base64."""
    if type(value) is str and _BASE64.fullmatch(value):
        value = base64.b64decode(value)
    if type(value) is not bytes:
        raise _Elsewhere
    return base64.urlsafe_b64encode(value).decode("ascii")


def _tools(tools: Any) -> list[dict[str, Any]]:
    """One tool of function declarations (the SDK merges declarations into one tool of its own)."""
    if (
        type(tools) is not list
        or len(tools) != 1
        or type(tools[0]) is not dict
        or tools[0].keys() != {"function_declarations"}
    ):
        raise _Elsewhere
    declarations = tools[0]["function_declarations"]
    if type(declarations) is not list or not declarations:
        raise _Elsewhere
    fields = (("description", str), ("name", str), ("parameters_json_schema", dict))
    return [{"functionDeclarations": [_fields(declaration, *fields) for declaration in declarations]}]


def _tool_config(tool_config: Any, vertex: bool) -> dict[str, Any]:
    if type(tool_config) is not dict or tool_config.keys() != {"function_calling_config"}:
        raise _Elsewhere
    calling = _fields(tool_config["function_calling_config"], ("allowed_function_names", list), ("mode", str))
    if calling.get("mode") not in _MODES or not all(
        type(name) is str for name in calling.get("allowed_function_names", ())
    ):
        raise _Elsewhere
    if (
        not vertex and "allowed_function_names" in calling
    ):  # the Developer API route renames it; Vertex AI's sends the model as it is
        calling = {"allowedFunctionNames": calling["allowed_function_names"], "mode": calling["mode"]}
    return {"functionCallingConfig": calling}
