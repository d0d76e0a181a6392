"""The `so-middleware` command: `serve` the embedded model, `chat` with it, `extract` typed data.

so-middleware serve                      # llama-server + SmolLM2 on loopback until Ctrl-C
so-middleware chat "Say hello"           # one chat call through the middleware chain
so-middleware extract --type mymod:Person --text "Ada Lovelace, 36"
so-middleware gateway                    # the Responses API over the embedded model (needs [gateway])
so-middleware extract --type mymod:Person --input in.jsonl --output out.jsonl --concurrency 8
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import importlib.util
import os
import signal
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .batch._cli import add_batch_arguments, run_batch
from .core import LocalServerError, OutputError, SOMiddlewareError, UserError

__all__ = ["main"]


def _progress(message: str) -> None:
    print(f"[so-middleware] {message}", file=sys.stderr, flush=True)


def _stop_on_signals() -> None:
    # Ctrl-C and SIGTERM both end `serve` cleanly, even when started from a shell that ignores
    # SIGINT for background jobs (the process would otherwise never stop on Ctrl-C).
    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGINT, interrupt)
    signal.signal(signal.SIGTERM, interrupt)


def _serve(args: argparse.Namespace) -> int:
    from .local import LocalModelServer

    _stop_on_signals()

    with LocalModelServer(port=args.port, on_progress=_progress) as server:
        print(f"OpenAI base_url:    {server.base_url}", flush=True)
        print(f"Anthropic base_url: {server.root_url}", flush=True)
        print(f"model:              {server.model}", flush=True)
        try:
            _progress("serving; press Ctrl-C to stop")
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

    from .core import DelegatingChatClient
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


def _load_type(spec: str) -> Any:
    """`package.module:Name` or `path/to/file.py:Name` (a dotted name after the colon is followed)."""
    module_part, _, attribute = spec.rpartition(":")
    if not module_part or not attribute:
        raise UserError(f"--type must look like MODULE:TYPE or FILE.py:TYPE, got {spec!r}")
    if module_part.endswith(".py"):
        path = Path(module_part)
        if not path.is_file():
            raise UserError(f"--type: no such file {path}")
        spec_obj = importlib.util.spec_from_file_location(path.stem, path)
        if spec_obj is None or spec_obj.loader is None:
            raise UserError(f"--type: cannot load {path}")
        module = importlib.util.module_from_spec(spec_obj)
        sys.modules[path.stem] = module
        spec_obj.loader.exec_module(module)
    else:
        try:
            module = importlib.import_module(module_part)
        except ImportError as error:
            raise UserError(f"--type: cannot import {module_part!r}: {error}") from error
    value: Any = module
    for name in attribute.split("."):
        if not hasattr(value, name):
            raise UserError(f"--type: {module_part} has no attribute {attribute!r}")
        value = getattr(value, name)
    return value


_KEYS = {"openai": "OPENAI_API_KEY", "openai-responses": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY"}
_ROUTES = {"openai": "chat", "openai-responses": "responses", "anthropic": "anthropic"}
_DEFAULT_MODELS = {"openai": "gpt-4o-mini", "openai-responses": "gpt-4o-mini", "anthropic": "claude-haiku-4-5"}


def _hosted_client(provider: str, model: str | None) -> Any:
    if provider == "anthropic":
        import anthropic

        from .providers.anthropic import AnthropicChatClient

        return AnthropicChatClient(anthropic.AsyncAnthropic(), model or _DEFAULT_MODELS[provider])
    import openai

    from .providers.openai import adapter_for

    return adapter_for(openai.AsyncOpenAI(), model=model or _DEFAULT_MODELS[provider], api=_ROUTES[provider])


async def _run_extract(client: Any, text: str, output_type: Any, stream: bool, max_tokens: int) -> Any:
    from .middleware.structured_output import with_structured_output

    structured = with_structured_output(client)
    options = {"max_tokens": max_tokens, "temperature": 0}
    if not stream:
        return await structured.get_response(text, options=options, output_type=output_type)
    responses = structured.get_response(text, options=options, output_type=output_type, stream=True)
    attempt, shown = 0, ""
    async with responses:
        async for update in responses:
            if update.attempt != attempt:
                attempt = update.attempt
                if sys.stderr.isatty():
                    print(file=sys.stderr)
                _progress(f"attempt {attempt + 1} (the previous answer did not validate)")
            if update.partial_value is not None and _json(update.partial_value) != shown:
                shown = _json(update.partial_value)
                if sys.stderr.isatty():  # redraw one line; a log gets one line per change
                    print(f"\r\033[K  partial: {shown[-150:]}", end="", file=sys.stderr, flush=True)
                else:
                    print(f"  partial: {shown[-150:]}", file=sys.stderr, flush=True)
    if sys.stderr.isatty():
        print(file=sys.stderr)
    return await responses.get_final_response()


def _json(value: Any) -> str:
    from pydantic import TypeAdapter

    return TypeAdapter(Any).dump_json(value).decode()


def _extract(args: argparse.Namespace) -> int:
    output_type = _load_type(args.type)
    if args.input is not None:  # many inputs: so_middleware.batch
        return run_batch(args, output_type)
    if args.text is not None:
        text = args.text
    elif args.file is not None:
        text = Path(args.file).read_text()
    else:
        text = sys.stdin.read()
    if not text.strip():
        raise UserError("nothing to extract from: give --text, --file or text on stdin")
    hosted = not args.local and bool(os.environ.get(_KEYS[args.provider]))
    started = time.perf_counter()
    if hosted:
        _progress(f"using the hosted {args.provider} API")
        response = asyncio.run(
            _run_extract(_hosted_client(args.provider, args.model), text, output_type, args.stream, args.max_tokens)
        )
    else:
        from .local import LocalModelServer, chat_client

        _progress(f"using the embedded local model on the {_ROUTES[args.provider]} route")
        with LocalModelServer(on_progress=_progress) as server:
            client = chat_client(server, route=_ROUTES[args.provider])  # type: ignore[arg-type]
            response = asyncio.run(_run_extract(client, text, output_type, args.stream, args.max_tokens))
    print(_json(response.value))
    usage = response.usage
    strategies = ",".join(str(a.strategy) for a in response.attempts)
    _progress(
        f"valid {getattr(output_type, '__name__', str(output_type))} after {len(response.attempts)} attempt(s) "
        f"[{strategies}]; tokens in={usage and usage.input_tokens} out={usage and usage.output_tokens}; "
        f"{time.perf_counter() - started:.1f}s"
    )
    return 0


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="so-middleware", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    commands = parser.add_subparsers(dest="command", required=True)

    serve = commands.add_parser("serve", help="run the embedded local model server until Ctrl-C")
    serve.add_argument("--port", type=int, default=None, help="port on 127.0.0.1 (default: a free one)")
    serve.set_defaults(run=_serve)

    chat = commands.add_parser("chat", help="one chat call to the embedded local model")
    chat.add_argument("prompt", nargs="?", default="Say hello in one short sentence.")
    chat.add_argument("--max-tokens", type=int, default=48)
    chat.set_defaults(run=_chat)

    extract = commands.add_parser("extract", help="extract a typed value from text and print it as JSON")
    extract.add_argument("--type", required=True, help="MODULE:TYPE or FILE.py:TYPE, e.g. examples/people.py:Person")
    source = extract.add_mutually_exclusive_group()
    source.add_argument("--text", help="the text to extract from (default: stdin)")
    source.add_argument("--file", help="a file with the text")
    extract.add_argument(
        "--provider",
        choices=sorted(_ROUTES),
        default="openai",
        help="the protocol (and hosted API when its key is set)",
    )
    extract.add_argument("--model", help="the hosted model (default: a small one of the provider)")
    extract.add_argument(
        "--local", action="store_true", help="use the embedded local model even when an API key is set"
    )
    extract.add_argument("--stream", action="store_true", help="stream, showing the partial value")
    extract.add_argument("--max-tokens", type=int, default=256)
    add_batch_arguments(extract)
    extract.set_defaults(run=_extract)

    # every argument after `gateway` goes to so_middleware.gateway's own parser (no '-' options here)
    gateway = commands.add_parser(
        "gateway", prefix_chars="+", help="the OpenAI Responses API over a Chat Completions backend"
    )
    gateway.add_argument("gateway_args", nargs="*")
    gateway.set_defaults(run=lambda args: importlib.import_module(".gateway._cli", __package__).main(args.gateway_args))
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `so-middleware` console script."""
    args = _parser().parse_args(argv)
    try:
        return int(args.run(args))
    except LocalServerError as error:
        _progress(f"error: {error}")
        return 2
    except OutputError as error:
        _progress(f"error: {type(error).__name__}: {error}")
        for attempt in error.attempts:
            _progress(f"  attempt {attempt.index + 1} [{attempt.strategy}]: {attempt.text[:200]!r}")
        return 1
    except SOMiddlewareError as error:
        _progress(f"error: {type(error).__name__}: {error}")
        return 1
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
