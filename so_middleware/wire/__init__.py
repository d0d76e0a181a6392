"""Wire formats, one module per protocol holding both directions: what a client sends and reads,
and what a server reads and answers. The adapters (`providers/`) write requests and read answers
with them; the gateway reads requests and writes answers with the same functions and tables. A
new protocol is one new module here (and a provider folder for its client and transport).

- `chat`: Chat Completions: requests both ways, answers both ways, streamed chunks read, `finish_reason`.
- `responses`: the Responses API: requests both ways, answers read, tools, `text.format`, usage,
  streaming event names, `incomplete_details.reason`.
- `responses_items`: Responses input and output items.
- `responses_events`: Responses streaming events: written from updates, read back into them.
- `messages`: Anthropic Messages: requests both ways, answers both ways, stream events, `stop_reason`.
- `gemini`: Gemini `generateContent`: requests both ways, answers both ways, stream chunks read, `finishReason`.
- `ollama`: Ollama's native `/api/chat`: requests both ways, answers both ways, stream chunks read, `done_reason`.
- `common`: what every protocol shares (the model, data URIs, function tools, `WireError`, `JSONView`).
- `prefill`: an assistant prefill a server echoes back, removed.

Pure functions (and small stateful stream readers): no client, no I/O, no SDK import.

Example:
    from so_middleware.wire import chat

    messages, options = chat.request_from_wire({"model": "m", "messages": [{"role": "user", "content": "Hi"}]})
"""

from . import chat, common, gemini, messages, ollama, prefill, responses, responses_events, responses_items

__all__ = [
    "chat",
    "common",
    "gemini",
    "messages",
    "ollama",
    "prefill",
    "responses",
    "responses_events",
    "responses_items",
]
