"""The commands: `serve` and `chat` on the embedded model, `extract` (one input, or many through
`so_middleware.batch`)."""

from __future__ import annotations

import argparse
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any, get_origin

from ..batch import run_batch, server_client
from ..core import UserError, redact_url, run_interruptibly
from ._types import _check_type, _load_type


def _progress(message: str) -> None:
    print(f"[so-middleware] {message}", file=sys.stderr, flush=True)


def _stop_on_signals() -> None:
    # Ctrl-C and SIGTERM both end a command cleanly (the server is stopped on the way out), even
    # when started from a shell that ignores SIGINT for background jobs.
    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGINT, interrupt)
    signal.signal(signal.SIGTERM, interrupt)


def _serve(args: argparse.Namespace) -> int:
    from ..local import LocalModelServer

    with LocalModelServer(port=args.port, threads=args.threads, on_progress=_progress) as server:
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


def _setup_local(args: argparse.Namespace) -> int:
    from ..local import setup_local

    return setup_local(rebuild=args.rebuild, quiet=args.quiet, on_progress=_progress)


def _chat(args: argparse.Namespace) -> int:
    from ..local import LocalModelServer, chat_client

    with LocalModelServer(threads=args.threads, on_progress=_progress) as server:
        client = chat_client(server, "chat", sync=True)
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


def _read_text(args: argparse.Namespace) -> str:
    if args.text is not None:
        text: str = args.text
    elif args.file is not None:
        try:
            text = Path(args.file).read_text()
        except (OSError, UnicodeDecodeError) as error:
            reason = error.strerror if isinstance(error, OSError) and error.strerror else str(error)
            raise UserError(f"--file: cannot read {args.file} ({reason}); give an existing text file") from error
    else:
        text = sys.stdin.read()
    if not text.strip():
        raise UserError("nothing to extract from: give --text, --file or text on stdin")
    return text


_KEYS = {"openai": "OPENAI_API_KEY", "openai-responses": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY"}
_ROUTES = {"openai": "chat", "openai-responses": "responses", "anthropic": "anthropic"}
_DEFAULT_MODELS = {"openai": "gpt-4o-mini", "openai-responses": "gpt-4o-mini", "anthropic": "claude-haiku-4-5"}


def _hosted_client(provider: str, model: str | None) -> Any:
    if provider == "anthropic":
        import anthropic

        from ..providers.anthropic import AnthropicChatClient

        return AnthropicChatClient(anthropic.AsyncAnthropic(), model or _DEFAULT_MODELS[provider])
    import openai

    from ..providers.openai import adapter_for

    return adapter_for(openai.AsyncOpenAI(), model=model or _DEFAULT_MODELS[provider], api=_ROUTES[provider])


async def _run_extract(client: Any, text: str, output_type: Any, stream: bool, max_tokens: int) -> Any:
    from ..middleware.structured_output import with_structured_output

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


def _type_name(output_type: Any) -> str:
    """`Person`, or `list[people.Person]` for a generic alias (whose `__name__` is only `list`)."""
    return str(output_type) if get_origin(output_type) else getattr(output_type, "__name__", str(output_type))


def _json(value: Any) -> str:
    from pydantic import TypeAdapter

    return TypeAdapter(Any).dump_json(value).decode()


def _check_server_choice(args: argparse.Namespace, key: str) -> None:
    """Refuse flags that cannot apply to the server that would answer (before anything starts)."""
    from ..local import MODEL_ID

    if args.base_url and args.local:
        raise UserError("--base-url names a server and --local asks for the embedded model: give one of them")
    hosted = not args.local and bool(os.environ.get(key))
    if (args.base_url or hosted) and args.threads is not None:
        where = "--base-url is given" if args.base_url else f"{key} is set"
        raise UserError(f"--threads sets the embedded model's threads; add --local, or drop --threads ({where})")
    if not args.base_url and not hosted and args.model not in (None, MODEL_ID):
        why = "--local was given" if args.local else f"{key} is not set"
        raise UserError(
            f"--model {args.model}: {why}, so the embedded model {MODEL_ID} would answer; "
            f"drop --model, or set {key} to use the hosted API"
        )


def _extract(args: argparse.Namespace) -> int:
    output_type = _load_type(args.type)
    _check_type(args.type, output_type)
    key = _KEYS[args.provider]
    _check_server_choice(args, key)
    if args.input is not None:  # many inputs: so_middleware.batch
        return run_batch(args, output_type)
    text = _read_text(args)
    started = time.perf_counter()
    if args.base_url:
        _progress(f"using the server at {redact_url(args.base_url)} ({args.provider} protocol)")
        client = server_client(args.provider, args.base_url, args.model, os.environ.get(key))
        response = run_interruptibly(_run_extract(client, text, output_type, args.stream, args.max_tokens))
    elif not args.local and os.environ.get(key):
        _progress(f"using the hosted {args.provider} API")
        response = run_interruptibly(
            _run_extract(_hosted_client(args.provider, args.model), text, output_type, args.stream, args.max_tokens)
        )
    else:
        from ..local import LocalModelServer, chat_client

        _progress(f"using the embedded local model on the {_ROUTES[args.provider]} route")
        with LocalModelServer(threads=args.threads, on_progress=_progress) as server:
            client = chat_client(server, route=_ROUTES[args.provider])  # type: ignore[arg-type]
            response = run_interruptibly(_run_extract(client, text, output_type, args.stream, args.max_tokens))
    print(_json(response.value))
    usage = response.usage
    strategies = ",".join(str(a.strategy) for a in response.attempts)
    _progress(
        f"valid {_type_name(output_type)} after {len(response.attempts)} attempt(s) "
        f"[{strategies}]; tokens in={usage and usage.input_tokens} out={usage and usage.output_tokens}; "
        f"{time.perf_counter() - started:.1f}s"
    )
    return 0
