"""Every answer of the gateway's Responses routes, captured on the way out and checked against the Open
Responses OpenAPI (tests/gateway/spec_schema.py): a JSON answer as a `ResponseResource`, a stream event by
event, an `input_items` list item by item as the spec's `ItemField` (the spec has no route of its own for
that list). OpenAI's custom tools, which the spec leaves out, are checked against the OpenAI SDK's types.
The clients under test read these same bytes."""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parents[1] / "gateway"))  # spec_schema and the spec live there
from spec_schema import OPENAI_ONLY_EVENTS, event_problems, list_problems, response_problems


@dataclass
class SpecTap:
    """ASGI middleware around the gateway; `problems()` lists what broke the spec, per answer."""

    app: Any
    answers: list[tuple[str, str, bytes]] = field(default_factory=list)  # (path, content type, body)
    requests: list[dict[str, Any]] = field(default_factory=list)  # the JSON bodies POSTed, as sent
    headers: list[dict[str, str]] = field(default_factory=list)  # of each request to those routes

    @property
    def state(self) -> Any:
        """The gateway's state: AppServer serves the tapped app with the gateway's connection limits."""
        return self.app.state

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        path = scope.get("path", "")
        if scope["type"] != "http" or not path.startswith("/v1/responses"):
            await self.app(scope, receive, send)
            return
        status, kind, body, sent = 0, "", bytearray(), bytearray()
        self.headers.append({name.decode(): value.decode() for name, value in scope["headers"]})

        async def read() -> dict[str, Any]:
            message: dict[str, Any] = await receive()
            sent.extend(message.get("body", b""))
            if message["type"] == "http.request" and not message.get("more_body") and scope["method"] == "POST":
                self.requests.append(json.loads(sent) if sent else {})
            return message

        async def tee(message: dict[str, Any]) -> None:
            nonlocal status, kind
            if message["type"] == "http.response.start":
                status = message["status"]
                headers = dict(message.get("headers") or [])
                kind = headers.get(b"content-type", b"").decode()
            elif message["type"] == "http.response.body":
                body.extend(message.get("body", b""))
            await send(message)

        await self.app(scope, read, tee)
        if status == 200:
            self.answers.append((path, kind, bytes(body)))

    def problems(self) -> list[str]:
        """Every spec violation in the answers so far (OpenAI's own reasoning event names allowed)."""
        found: list[str] = []
        for path, kind, body in self.answers:
            if kind.startswith("application/json"):
                answer = json.loads(body)
                if answer.get("object") == "response":
                    found += [f"{path}: {p}" for p in response_problems(answer, custom_tools=True)]
                if answer.get("object") == "list":
                    found += [f"{path}: {p}" for p in list_problems(answer)]
                continue
            for line in body.decode().splitlines():
                if line.startswith("data:") and line[5:].strip() != "[DONE]":
                    event = json.loads(line[5:])
                    if event.get("type") not in OPENAI_ONLY_EVENTS:
                        found += [f"{path} {event.get('type')}: {p}" for p in event_problems(event, custom_tools=True)]
        return found
