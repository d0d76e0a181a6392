"""The Responses gateway: the OpenAI Responses API in front of any Chat Completions backend.

`text.format` reaches the backend as `response_format`, forwarded as is (seed 004), so
`client.responses.parse()` and every framework on the Responses API get constrained decoding
from llama.cpp, vLLM, Ollama or any Chat Completions server. Needs
`pip install "so-middleware[gateway]"`; from a shell, `so-middleware gateway`.

Example:
    import uvicorn
    from so_middleware.gateway import GatewayConfig, create_app, server_options

    config = GatewayConfig(backend_url="http://127.0.0.1:8080/v1")
    # server_options: the connection cap and header deadline, which uvicorn itself does not have
    uvicorn.run(create_app(config), host="127.0.0.1", port=8000, **server_options(config))
"""

try:
    import orjson as _orjson  # noqa: F401
    import starlette as _starlette  # noqa: F401
    import uvicorn as _uvicorn  # noqa: F401
except ImportError as error:  # pragma: no cover - exercised in a subprocess without the extra
    raise ImportError("so_middleware.gateway needs its extra: pip install 'so-middleware[gateway]'") from error

from ..wire.responses import text_format_to_chat as chat_response_format
from ._app import create_app
from ._config import GatewayConfig
from ._limits import server_options
from ._open_store import open_store
from ._store import ResponseStore, SQLiteStore, StoredResponse

__all__ = [
    "GatewayConfig",
    "ResponseStore",
    "SQLiteStore",
    "StoredResponse",
    "chat_response_format",
    "create_app",
    "open_store",
    "server_options",
]
