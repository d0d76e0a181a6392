"""`rest_request`: which requests the lower path writes, and how. That the bytes are the SDK's own
is checked over a socket in `test_gemini_requests.py`; here, the requests it leaves to the SDK."""

from __future__ import annotations

from typing import Any

import pytest

from so_middleware.providers.google._rest import rest_request

HI = [{"role": "user", "parts": [{"text": "Hi"}]}]


def _request(contents: Any = HI, model: Any = "gemini-2.5-flash", **config: Any) -> dict[str, Any]:
    return {"model": model, "contents": contents, "config": config}


@pytest.mark.parametrize(
    "request_",
    [
        _request(thinking_config={"thinking_budget": 0}),  # a config field it does not write
        _request(response_schema={"type": "OBJECT"}),  # the OpenAPI form, which the SDK converts
        _request(temperature="0.2"),  # a value the SDK's model would convert
        _request(seed=True),
        _request(stop_sequences=["a", 1]),
        _request(automatic_continuation="no"),
        _request(contents=[]),
        _request(contents="Hi"),
        _request(contents=[{"role": "user", "parts": [{"executable_code": {"code": "1"}}]}]),
        _request(contents=[{"role": "user", "parts": [{"inline_data": {"mime_type": "image/png", "data": "aGk="}}]}]),
        _request(contents=[{"role": "model", "parts": [{"text": "x", "thought_signature": "not base64!"}]}]),
        _request(tools=[{"function_declarations": [{"name": "a"}]}, {"function_declarations": [{"name": "b"}]}]),
        _request(tools=[{"google_search": {}}]),
        _request(tool_config={"function_calling_config": {"mode": "VALIDATED"}}),
        _request(model="models/../files"),
        _request(model=None),
        {**_request(), "extra": 1},
    ],
)
def test_what_it_does_not_write_is_left_to_the_sdk(request_: dict[str, Any]) -> None:
    assert rest_request(request_, vertex=False) is None


@pytest.mark.parametrize(
    ("model", "vertex", "path"),
    [
        ("gemini-2.5-flash", False, "models/gemini-2.5-flash"),
        ("tunedModels/mine", False, "tunedModels/mine"),
        ("gemini-2.5-flash", True, "publishers/google/models/gemini-2.5-flash"),
        ("meta/llama-3", True, "publishers/meta/models/llama-3"),
        ("projects/p/locations/l/endpoints/e", True, "projects/p/locations/l/endpoints/e"),
    ],
)
def test_the_models_path_on_each_route(model: str, vertex: bool, path: str) -> None:
    assert rest_request(_request(model=model), vertex=vertex) == (path, {"contents": HI})  # no config: none sent


def test_the_body_is_in_the_sdks_spelling_and_order() -> None:
    call = {"function_call": {"name": "f", "args": {"q": 1}, "id": "c1"}, "thought_signature": "c2ln+/8="}
    request = _request(
        contents=[{"role": "model", "parts": [call]}],
        seed=7,
        temperature=0,
        system_instruction={"parts": [{"text": "S"}]},
        http_options={"timeout": 5000},
    )
    found = rest_request(request, vertex=False)
    assert found is not None
    assert list(found[1]) == ["contents", "systemInstruction", "generationConfig"]
    assert found[1]["contents"] == [
        {"parts": [{"functionCall": {"id": "c1", "args": {"q": 1}, "name": "f"}, "thoughtSignature": "c2ln-_8="}],
         "role": "model"}
    ]  # fmt: skip
    assert list(found[1]["contents"][0]["parts"][0]["functionCall"]) == ["id", "args", "name"]
    assert found[1]["generationConfig"] == {"temperature": 0.0, "seed": 7}
    assert type(found[1]["generationConfig"]["temperature"]) is float
