"""Capability discovery: which server is behind a base URL, asked once and remembered.

An adapter given no `capabilities=` whose base URL is not a known hosted API identifies the
server on first use with a few cheap GET requests sent at once, through the adapter's own SDK
client (its auth, proxies and transport), bounded by one short timeout:

| server          | probe              | recognised by                                      |
|-----------------|--------------------|----------------------------------------------------|
| llama.cpp       | `GET /props`       | `default_generation_settings` or `build_info`      |
| Ollama          | `GET /api/version` | a `version`                                        |
| vLLM            | `GET /version`     | a `version`                                        |
| TGI             | `GET /info`        | `model_id` with a `router` or `version`            |
| LM Studio       | `GET /api/v0/models` | a model list with `object: "list"`               |
| so-middleware gateway | `GET /health` | `service: "so-middleware-gateway"`                |

What is found is cached per server root for the life of the process (a failed probe too: it is
never retried per call), and one probe runs however many first calls arrive at once. Hosted
APIs are never probed. A probe's 404 is the expected answer of every other kind of server: the
HTTP client's own log lines for the probes (httpx's "HTTP Request: GET .../props 404") are
lowered to DEBUG, so an application logging at INFO sees none of them.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal
from urllib.parse import urlsplit

import anyio

__all__ = ["HOSTED_HOSTS", "ServerInfo", "classify", "identify_server", "is_hosted", "reset_discovery", "server_root"]

logger = logging.getLogger("so_middleware.discovery")

ServerKind = Literal["llama.cpp", "ollama", "vllm", "tgi", "lmstudio", "so-middleware-gateway", "unknown"]

# Hosts of hosted APIs: never probed (their profile comes from the URL and model).
HOSTED_HOSTS = (
    "api.openai.com",
    "openai.azure.com",
    "api.anthropic.com",
    "generativelanguage.googleapis.com",
    "aiplatform.googleapis.com",
    "api.groq.com",
    "api.together.xyz",
    "api.fireworks.ai",
    "api.mistral.ai",
    "openrouter.ai",
    "api.deepseek.com",
    "api.x.ai",
    "api.cohere.ai",
    "api.perplexity.ai",
)

PROBES = ("/props", "/api/version", "/version", "/info", "/api/v0/models", "/health")
PROBE_TIMEOUT = 1.5  # seconds for the whole probe, all requests together


@dataclass(frozen=True)
class ServerInfo:
    """What discovery found: the server kind, its version when it says, and facts it reports.

    Example: `ServerInfo("llama.cpp", "b4500", {"supports_tools": False})`.
    """

    kind: ServerKind
    version: str | None = None
    facts: Mapping[str, Any] = field(default_factory=dict)


UNKNOWN = ServerInfo("unknown")

Fetch = Callable[[str], Awaitable[Any]]  # GET a path under the server root -> parsed JSON or None


def is_hosted(base_url: str) -> bool:
    """True for a hosted API's base URL (never probed)."""
    host = (urlsplit(base_url).hostname or "").lower()
    return any(host == known or host.endswith("." + known) for known in HOSTED_HOSTS)


def server_root(base_url: str) -> str:
    """The server root of a base URL: `http://h:8000/v1/` -> `http://h:8000`."""
    parts = urlsplit(base_url)
    path = parts.path.rstrip("/")
    if path.endswith("/v1"):
        path = path[: -len("/v1")]
    return f"{parts.scheme}://{parts.netloc}{path}"


def classify(answers: Mapping[str, Any]) -> ServerInfo:
    """The server kind from the JSON bodies of the probes that answered 200 (path -> body)."""
    props = answers.get("/props")
    if isinstance(props, dict) and ("default_generation_settings" in props or "build_info" in props):
        caps = props.get("chat_template_caps")
        facts: dict[str, Any] = {}
        if isinstance(caps, dict) and isinstance(caps.get("supports_tools"), bool):
            facts["supports_tools"] = caps["supports_tools"]
        modalities = props.get("modalities")  # llama-server with a vision projector: {"vision": true}
        if isinstance(modalities, dict) and isinstance(modalities.get("vision"), bool):
            facts["vision"] = modalities["vision"]
        build = props.get("build_info")
        return ServerInfo("llama.cpp", build if isinstance(build, str) else None, facts)
    health = answers.get("/health")
    if isinstance(health, dict) and health.get("service") == "so-middleware-gateway":
        return ServerInfo("so-middleware-gateway", _version(health))
    ollama = answers.get("/api/version")
    if isinstance(ollama, dict) and _version(ollama):
        return ServerInfo("ollama", _version(ollama))
    info = answers.get("/info")
    if isinstance(info, dict) and "model_id" in info and ("router" in info or "version" in info):
        return ServerInfo("tgi", _version(info))
    vllm = answers.get("/version")
    if isinstance(vllm, dict) and _version(vllm):
        return ServerInfo("vllm", _version(vllm))
    models = answers.get("/api/v0/models")
    if isinstance(models, dict) and models.get("object") == "list":
        return ServerInfo("lmstudio")
    return UNKNOWN


def _version(body: Mapping[str, Any]) -> str | None:
    version = body.get("version")
    return version if isinstance(version, str) and version else None


# Set while a probe runs: the probe's tasks inherit it, other requests never see it.
_probing: contextvars.ContextVar[bool] = contextvars.ContextVar("so_middleware_probing", default=False)
_HTTP_LOGGERS = ("httpx", "httpx2")  # the SDKs' HTTP clients log each request at INFO


class _ProbeRecordsAtDebug(logging.Filter):
    """A probe's request log line at DEBUG (kept only where DEBUG is on): a 404 from a server of
    another kind is no error of the application's."""

    def filter(self, record: logging.LogRecord) -> bool:
        if not _probing.get() or record.levelno <= logging.DEBUG:
            return True
        if not logging.getLogger(record.name).isEnabledFor(logging.DEBUG):
            return False
        record.levelno, record.levelname = logging.DEBUG, logging.getLevelName(logging.DEBUG)
        return True


_PROBE_FILTER = _ProbeRecordsAtDebug()


def _quiet_probe_logs() -> None:
    for name in _HTTP_LOGGERS:
        http_logger = logging.getLogger(name)
        if _PROBE_FILTER not in http_logger.filters:
            http_logger.addFilter(_PROBE_FILTER)


class _Cache:
    """Servers identified so far (by root), and the probes under way, per event loop."""

    def __init__(self) -> None:
        self.found: dict[str, ServerInfo] = {}
        self.pending: dict[tuple[str, int], asyncio.Future[ServerInfo]] = {}
        self.probes = 0  # probes started, for tests and diagnostics


_cache = _Cache()


def reset_discovery() -> None:
    """Forget every server identified so far (the next first call probes again)."""
    _cache.found.clear()
    _cache.pending.clear()


async def identify_server(root: str, fetch: Fetch, *, timeout: float = PROBE_TIMEOUT) -> ServerInfo:
    """Identify the server at `root` once; concurrent callers share the one probe.

    `fetch(path)` returns the JSON body of a 200 answer, or None (any error, any other status).
    """
    known = _cache.found.get(root)
    if known is not None:
        return known
    key = (root, id(asyncio.get_running_loop()))
    pending = _cache.pending.get(key)
    if pending is not None:
        try:
            return await asyncio.shield(pending)
        except RuntimeError:  # the probing caller was cancelled: probe again
            return await identify_server(root, fetch, timeout=timeout)
    future: asyncio.Future[ServerInfo] = asyncio.get_running_loop().create_future()
    _cache.pending[key] = future
    try:
        info = await _probe(root, fetch, timeout)
        _cache.found[root] = info
        future.set_result(info)
        return info
    except BaseException:  # cancelled while probing: the waiters probe again
        future.set_exception(RuntimeError("the discovery probe was cancelled"))
        future.exception()  # retrieved: no "never retrieved" warning when nobody waits
        raise
    finally:
        _cache.pending.pop(key, None)


async def _probe(root: str, fetch: Fetch, timeout: float) -> ServerInfo:
    _cache.probes += 1
    answers: dict[str, Any] = {}

    async def ask(path: str) -> None:
        try:
            body = await fetch(path)
        except Exception:  # a probe that fails says only "not this one"
            return
        if body is not None:
            answers[path] = body

    _quiet_probe_logs()
    marked = _probing.set(True)
    try:
        with anyio.move_on_after(timeout):
            async with anyio.create_task_group() as group:
                for path in PROBES:
                    group.start_soon(ask, path)
    finally:
        _probing.reset(marked)
    info = classify(answers)
    logger.debug("identified %s at %s (version %s)", info.kind, root, info.version or "unknown")
    return info
