"""The `so-middleware` command: `serve` the embedded model, `chat` with it, `extract` typed data.

    so-middleware serve                      # llama-server + SmolLM2 on loopback until Ctrl-C
    so-middleware chat "Say hello"           # one chat call through the middleware chain
    so-middleware extract --type mymod:Person --text "Ada Lovelace, 36"
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence

from ._exceptions import LocalServerError, SOMiddlewareError

__all__ = ["main"]


def _progress(message: str) -> None:
    print(f"[so-middleware] {message}", file=sys.stderr, flush=True)


def _serve(args: argparse.Namespace) -> int:
    from .local import LocalModelServer

    with LocalModelServer(port=args.port, on_progress=_progress) as server:
        print(f"OpenAI base_url:    {server.base_url}", flush=True)
        print(f"Anthropic base_url: {server.root_url}", flush=True)
        print(f"model:              {server.model}", flush=True)
        _progress("serving; press Ctrl-C to stop")
        try:
            while server.running:
                time.sleep(0.5)
        except KeyboardInterrupt:
            _progress("stopping")
        if not server.running:
            _progress("llama-server stopped unexpectedly:\n" + server.log_tail())
            return 1
    return 0


def _chat(args: argparse.Namespace) -> int:
    import openai

    from ._delegating import DelegatingChatClient
    from .local import LocalModelServer
    from .providers.openai import LLAMA_SERVER, OpenAIChatClient

    with LocalModelServer(on_progress=_progress) as server:
        sdk = openai.OpenAI(base_url=server.base_url, api_key="local")
        client = DelegatingChatClient(OpenAIChatClient(sdk, server.model, capabilities=LLAMA_SERVER))
        options = {"max_tokens": args.max_tokens, "temperature": 0}
        started = time.perf_counter()
        response = client.get_response_sync(args.prompt, options=options)
        elapsed = time.perf_counter() - started
        print(response.text.strip())
        usage = response.usage
        _progress(
            f"finish_reason={response.finish_reason} input_tokens={usage and usage.input_tokens} "
            f"output_tokens={usage and usage.output_tokens} seconds={elapsed:.2f}"
        )
    return 0


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="so-middleware", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)

    serve = commands.add_parser("serve", help="run the embedded local model server until Ctrl-C")
    serve.add_argument("--port", type=int, default=None, help="port on 127.0.0.1 (default: a free one)")
    serve.set_defaults(run=_serve)

    chat = commands.add_parser("chat", help="one chat call to the embedded local model")
    chat.add_argument("prompt", nargs="?", default="Say hello in one short sentence.")
    chat.add_argument("--max-tokens", type=int, default=48)
    chat.set_defaults(run=_chat)

    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `so-middleware` console script."""
    args = _parser().parse_args(argv)
    try:
        return int(args.run(args))
    except LocalServerError as error:
        _progress(f"error: {error}")
        return 2
    except SOMiddlewareError as error:
        _progress(f"error: {type(error).__name__}: {error}")
        return 1
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
