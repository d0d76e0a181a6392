"""`so-middleware gateway`: the Responses gateway from a shell.

so-middleware gateway                                   # embedded local model + gateway on loopback
so-middleware gateway --backend http://127.0.0.1:8000/v1 --port 8080
so-middleware gateway --backend URL --api-key secret --store responses.db
so-middleware gateway --backend URL --log-format json --log-level warning

Ctrl-C or SIGTERM stop the gateway gracefully (a request in flight gets 3 s to finish, then a
stream ends with `response.failed` and a plain request gets a 503; background runs end
`cancelled`) and then the embedded llama-server: no process is left behind. Logs go to stderr:
at `info`, one line per request (no key, no content).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import gc
import logging
import logging.config
import os
import signal
from collections.abc import Iterator, Sequence
from typing import Any

from so_middleware import UserError
from so_middleware.core import redact_url

from ._logs import LOG_FORMATS, LOG_LEVELS, logging_config
from ._store import MEMORY_MAX_AGE, MEMORY_MAX_PER_KEY, MEMORY_MAX_RESPONSES

__all__ = ["main"]

ENV_BACKEND_KEY = "SO_MIDDLEWARE_BACKEND_API_KEY"
ENV_API_KEYS = "SO_MIDDLEWARE_GATEWAY_API_KEYS"  # comma-separated


_log = logging.getLogger("so_middleware.gateway")


def _progress(message: str) -> None:
    _log.info(message)  # on stderr in the chosen format, as every other line there


def parser() -> argparse.ArgumentParser:
    """The options of `so-middleware gateway`."""
    p = argparse.ArgumentParser(prog="so-middleware gateway", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    p.add_argument("--backend", help="a Chat Completions base URL (default: start the embedded local model)")
    p.add_argument("--backend-api-key", default=os.environ.get(ENV_BACKEND_KEY), help=f"or ${ENV_BACKEND_KEY}")
    p.add_argument("--host", default="127.0.0.1", help="interface to bind (default: loopback only)")
    p.add_argument("--port", type=_port, default=8000)
    p.add_argument("--api-key", action="append", default=None,
                   help=f"a key clients must send (repeatable; or ${ENV_API_KEYS}, comma-separated)")  # fmt: skip
    p.add_argument("--store", help="a SQLite file or a postgresql:// URL (default: SQLite in memory)")
    p.add_argument("--memory-store-size", type=_positive(int), default=MEMORY_MAX_RESPONSES,
                   help="without --store: the newest responses kept in memory (default: %(default)s)")  # fmt: skip
    p.add_argument("--memory-store-per-key", type=_positive(int), default=MEMORY_MAX_PER_KEY,
                   help="without --store: the newest responses of one client key kept (default: %(default)s)")  # fmt: skip
    p.add_argument("--memory-store-age", type=_positive(float), default=MEMORY_MAX_AGE,
                   help="without --store: seconds a response is kept after its last write (default: %(default)s)")  # fmt: skip
    p.add_argument("--model", help="the model for requests that name none")
    p.add_argument("--max-body-bytes", type=_positive(int), default=16 * 1024 * 1024)
    p.add_argument("--max-connections", type=_positive(int), default=400,
                   help="open client connections; one more gets 503 (default: %(default)s)")  # fmt: skip
    p.add_argument("--header-timeout", type=_positive(float), default=10.0,
                   help="seconds a client has to send a request's headers (default: %(default)s)")  # fmt: skip
    p.add_argument("--body-timeout", type=_positive(float), default=60.0,
                   help="seconds a client has to send a request's body; then 408 (default: %(default)s)")  # fmt: skip
    p.add_argument("--max-background-runs", type=_positive(int), default=8,
                   help="background runs calling the backend at once; more wait queued (default: %(default)s)")  # fmt: skip
    p.add_argument("--max-queued-runs", type=_whole, default=64,
                   help="background runs waiting for a slot; past both, a 429 with retry-after (default: %(default)s)")  # fmt: skip
    p.add_argument("--run-lease", type=_positive(float), default=10.0,
                   help="with a postgresql:// store: seconds after its process was last heard from that "
                        "another gateway fails a background run (default: %(default)s)")  # fmt: skip
    p.add_argument(
        "--max-websockets",
        type=_positive(int),
        default=200,
        help="WebSocket connections open at once; one more is refused 429 (default: %(default)s)",
    )
    p.add_argument(
        "--max-websockets-per-key",
        type=_positive(int),
        default=16,
        help="WebSocket connections one API key may hold open (default: %(default)s)",
    )
    p.add_argument(
        "--websocket-idle-timeout",
        type=_positive(float),
        default=300.0,
        help="seconds a WebSocket may wait for its next response.create (default: %(default)s)",
    )
    p.add_argument(
        "--websocket-max-age",
        type=_positive(float),
        default=3600.0,
        help="seconds a WebSocket connection may last (default: %(default)s)",
    )
    p.add_argument("--emulated-call-repeats", type=_positive(int), default=2,
                   help="on a backend whose tools are emulated: identical answered calls in a row after "
                        "which the model must answer in text (default: %(default)s)")  # fmt: skip
    p.add_argument("--log-level", choices=LOG_LEVELS, default="info",
                   help="info logs one line per request; warning only problems (default: %(default)s)")  # fmt: skip
    p.add_argument("--log-format", choices=LOG_FORMATS, default="text",
                   help="json: one JSON object a line, for a log collector (default: %(default)s)")  # fmt: skip
    p.add_argument("--validate", action="store_true",
                   help="validate json_schema output and re-ask on failure (beyond the passthrough spec)")  # fmt: skip
    return p


def _port(text: str) -> int:
    port = int(text) if text.strip().isdigit() else -1
    if not 1 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"a port is a number from 1 to 65535, got {text!r}")
    return port


def _positive(kind: type[int] | type[float]) -> Any:
    def parse(text: str) -> int | float:
        try:
            value = kind(text)
        except ValueError:
            value = 0
        if not 0 < value < float("inf"):
            raise argparse.ArgumentTypeError(f"a number greater than 0 is needed, got {text!r}")
        return value

    return parse


def _whole(text: str) -> int:
    if not text.strip().isdigit():
        raise argparse.ArgumentTypeError(f"a whole number of 0 or more is needed, got {text!r}")
    return int(text)


def _api_keys(args: argparse.Namespace) -> tuple[str, ...]:
    """The keys from --api-key, else from the environment (each stripped; an empty one is an error)."""
    if args.api_key is not None:
        return tuple(key.strip() for key in args.api_key)  # an empty one is refused by GatewayConfig
    listed = os.environ.get(ENV_API_KEYS)
    if listed is None:
        return ()
    keys = tuple(key.strip() for key in listed.split(","))
    if not all(keys):
        raise UserError(f"${ENV_API_KEYS} has an empty key ({listed!r} has {len(keys)} entries): it would let "
                        "anyone in; unset it to run without keys")  # fmt: skip
    return keys


EMBEDDED_SLOTS = 8  # the embedded model's slots (requests it answers at once)


@contextlib.contextmanager
def _backend(args: argparse.Namespace) -> Iterator[tuple[str, str | None]]:
    if args.backend:
        yield args.backend, args.model
        return
    from so_middleware.local import LocalModelServer

    # Agent clients and test runners send many short requests at once: more slots than the library's
    # default two, over one KV pool they share (each keeps the model's whole context), keep
    # them from queuing behind one long answer.
    with LocalModelServer(parallel=EMBEDDED_SLOTS, extra_args=["--kv-unified"], on_progress=_progress) as server:
        yield server.base_url, args.model or server.model


def main(argv: Sequence[str] | None = None) -> int:
    """Run the gateway until Ctrl-C or SIGTERM (exit 2, before anything starts, on a wrong option)."""
    options = parser()
    args = options.parse_args(argv)
    logging.config.dictConfig(logging_config(args.log_level, args.log_format))  # uvicorn's loggers too
    from ._app import create_app
    from ._config import GatewayConfig

    try:  # checked before the embedded model starts; the backend URL is known after
        config = GatewayConfig(backend_url=args.backend or "", backend_api_key=args.backend_api_key,
                               api_keys=_api_keys(args), store=args.store, default_model=args.model,
                               validate=args.validate, max_body_bytes=args.max_body_bytes,
                               max_connections=args.max_connections, header_timeout=args.header_timeout,
                               body_timeout=args.body_timeout, max_background_runs=args.max_background_runs,
                               max_queued_runs=args.max_queued_runs, run_lease=args.run_lease,
                               memory_store_size=args.memory_store_size,
                               memory_store_age=args.memory_store_age,
                               memory_store_per_key=args.memory_store_per_key,
                               max_websockets=args.max_websockets,
                               max_websockets_per_key=args.max_websockets_per_key,
                               websocket_idle_timeout=args.websocket_idle_timeout,
                               websocket_max_age=args.websocket_max_age,
                               emulated_call_repeats=args.emulated_call_repeats)  # fmt: skip
    except UserError as error:
        options.error(str(error))

    def interrupt(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    # uvicorn handles the signals while it serves and re-raises them after its graceful shutdown;
    # these handlers turn that into KeyboardInterrupt, so the local model is stopped on the way out.
    signal.signal(signal.SIGINT, interrupt)
    signal.signal(signal.SIGTERM, interrupt)
    try:
        with _backend(args) as (backend_url, model):
            import uvicorn

            from ._limits import server_options

            config = dataclasses.replace(config, backend_url=backend_url, default_model=model)
            server = uvicorn.Server(uvicorn.Config(create_app(config), host=args.host, port=args.port,
                                                   log_config=None, log_level=args.log_level, access_log=False,
                                                   timeout_graceful_shutdown=5, **server_options(config)))  # fmt: skip
            print(f"Responses API base_url: http://{args.host}:{args.port}/v1", flush=True)
            print(f"backend:                {redact_url(backend_url)}", flush=True)
            _progress("serving; press Ctrl-C to stop")
            _serve(server)
            if not server.started:
                _log.error("the gateway did not start on %s:%s (the error is above)", args.host, args.port)
                return 1
    except KeyboardInterrupt:
        pass
    _progress("stopped")
    return 0


def _serve(server: Any) -> None:
    """`server.run()`, with what start-up made (the modules, the app) moved out of the garbage
    collector's reach first (`gc.freeze`): the collections that each request's short-lived objects
    trigger then do not walk those hundreds of thousands of objects again and again."""
    gc.collect()  # garbage is not frozen: it would stay for good
    gc.freeze()
    try:
        server.run()
    finally:
        gc.unfreeze()
