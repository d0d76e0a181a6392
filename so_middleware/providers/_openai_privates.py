"""Every use of an SDK's private names, in one place (the openai SDK's, and one each of
google-genai's, ollama's and httpx's).

`SDKPost` sends an adapter's request through the SDK client's documented `post` method instead
of `create`, which needs two things the SDK does not publish: whether a bound `create` is the
SDK's own (not an instrumentation wrapper or a test double), and whether its request options
carry `security`. The gateway's direct backend calls raise the SDK's own typed error for a status
that is not 2xx, which the SDK builds with a private method. All three are read here and nowhere else; `test_openai_privates.py` fails, naming
what changed, when an SDK release moves them.
"""

from __future__ import annotations

import os
from typing import Any

from ._own import is_packages_own

__all__ = [
    "OPENAI_PACKAGE_DIR",
    "genai_api_client",
    "genai_base_url",
    "genai_never_retries",
    "httpx_default_encoding",
    "httpx_redirect_request",
    "httpx_transport_for",
    "ollama_base_url",
    "ollama_connection_message",
    "ollama_http_client",
    "ollama_post",
    "mistral_build_request",
    "is_the_sdks_own",
    "request_options_know_security",
    "status_error_from_response",
]


def _openai_dir() -> str:
    try:
        import openai
    except ImportError:  # pragma: no cover - only the OpenAI adapters call this
        return "\0"
    return os.path.dirname(os.path.abspath(openai.__file__)) + os.sep


OPENAI_PACKAGE_DIR = _openai_dir()  # the installed openai package's folder, with a trailing separator


def is_the_sdks_own(function: Any) -> bool:
    """A plain function whose source file is in the openai package (`type`, not `isinstance`:
    a wrapt proxy passes for the function it wraps)."""
    return is_packages_own(function, OPENAI_PACKAGE_DIR)


def request_options_know_security() -> bool:
    """Whether this openai SDK's request options (`openai._models.FinalRequestOptions`) carry
    `security` (which credentials to send): `create` sends the API key only, not an admin key."""
    try:
        from openai._models import FinalRequestOptions
    except ImportError:  # the module moved: send what `post` sends by default
        return False
    return "security" in FinalRequestOptions.model_fields


def status_error_from_response(sdk_client: Any, response: Any) -> Exception:
    """The SDK client's own typed error (`openai.BadRequestError`, `RateLimitError`, ...) for an
    HTTP response whose status is not 2xx, built as the SDK builds it (its private
    `_make_status_error_from_response`)."""
    error: Exception = sdk_client._make_status_error_from_response(response)
    return error


def genai_base_url(sdk_client: Any) -> str | None:
    """Where a `google.genai.Client` sends its requests (its private `_api_client._http_options`:
    the SDK publishes no base URL); None when the SDK moved it."""
    options = getattr(getattr(sdk_client, "_api_client", None), "_http_options", None)
    base_url = getattr(options, "base_url", None)
    return base_url if isinstance(base_url, str) else None


def genai_never_retries(sdk_client: Any) -> bool:
    """Whether a `google.genai.Client` was made without `retry_options` (then the SDK makes one
    attempt per request), read from its private `_api_client._http_options`; False when the SDK
    moved them."""
    options = getattr(getattr(sdk_client, "_api_client", None), "_http_options", None)
    return options is not None and "retry_options" in type(options).model_fields and options.retry_options is None


def genai_api_client(sdk_client: Any) -> Any:
    """A `google.genai.Client`'s private `_api_client`, whose `async_request(method, path, body,
    http_options)` and `async_request_streamed(...)` send a REST body as it is, with the client's
    auth, base URL (Vertex AI's project and location), retries and typed errors, and whose
    `vertexai` says the route; None when the SDK moved them."""
    api_client = getattr(sdk_client, "_api_client", None)
    methods = (getattr(api_client, name, None) for name in ("async_request", "async_request_streamed"))
    return api_client if all(callable(method) for method in methods) and hasattr(api_client, "vertexai") else None


def ollama_base_url(sdk_client: Any) -> str | None:
    """Where an `ollama.Client`/`AsyncClient` sends its requests (its private httpx client's
    `base_url`: the SDK publishes none); None when the SDK moved it."""
    base_url = getattr(getattr(sdk_client, "_client", None), "base_url", None)
    return str(base_url) if base_url is not None else None


def ollama_post(sdk_client: Any) -> Any:
    """An `ollama.AsyncClient`'s private `_request(cls, method, path, json=, stream=)`, which sends
    a body as it is (its `chat` rebuilds tools through its own types, which keep only some schema
    keywords: `anyOf`, `minimum`, `additionalProperties` are dropped); None when the SDK moved it."""
    post = getattr(sdk_client, "_request", None)
    return post if callable(post) else None


def ollama_http_client(sdk_client: Any) -> Any:
    """The `httpx.AsyncClient` an `ollama.AsyncClient` sends with (its private `_client`); None
    when the SDK moved it."""
    return getattr(sdk_client, "_client", None)


def ollama_connection_message() -> str:
    """The message of the `ConnectionError` an `ollama` client raises for a server it cannot reach
    (its private `_client.CONNECTION_ERROR_MESSAGE`)."""
    from ollama import _client

    message = getattr(_client, "CONNECTION_ERROR_MESSAGE", None)
    return message if isinstance(message, str) else "Failed to connect to Ollama."


def httpx_transport_for(http: Any, url: Any) -> Any:
    """The transport an `httpx.AsyncClient` sends a request for `url` with (its mounts, proxies,
    else its own), by its private `_transport_for_url`; None when httpx moved it."""
    find = getattr(http, "_transport_for_url", None)
    return find(url) if callable(find) else None


def httpx_redirect_request(http: Any, request: Any, response: Any) -> Any:
    """The request an `httpx.AsyncClient` makes to follow a redirect `response` to `request` (its
    private `_build_redirect_request`: method, URL, headers and body as the redirect asks); None
    when httpx moved it."""
    build = getattr(http, "_build_redirect_request", None)
    return build(request, response) if callable(build) else None


def httpx_default_encoding(http: Any) -> Any:
    """The text encoding an `httpx.AsyncClient` gives the answers it reads when they name none
    (its private `_default_encoding`; httpx's default, `utf-8`, when it moved)."""
    return getattr(http, "_default_encoding", "utf-8")


def mistral_build_request(chat: Any) -> Any:
    """A `mistralai` resource's private `_build_request_async(...)`, which builds the HTTP request
    as its own methods do (server URL, auth, user agent, timeout); None when the SDK moved it."""
    build = getattr(chat, "_build_request_async", None)
    return build if callable(build) else None
