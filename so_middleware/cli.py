"""The `so-middleware` command: `serve` the embedded model, `chat` with it, `extract` typed data.

so-middleware serve                      # llama-server + SmolLM2 on loopback until Ctrl-C
so-middleware chat "Say hello"           # one chat call through the middleware chain
so-middleware extract --type mymod:Person --text "Ada Lovelace, 36"
so-middleware extract --type mymod:Person --input in.jsonl --output out.jsonl --concurrency 8
so-middleware gateway                    # the Responses API over the embedded model (needs [gateway])

Every failure is one line on stderr (the cause and what to do) and a non-zero exit code;
--debug adds the traceback.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import importlib.util
import os
import re
import signal
import sys
import time
import traceback
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType
from typing import Any, NoReturn

from . import __version__
from .batch._cli import add_batch_arguments, run_batch
from .core import LocalServerError, OutputError, UserError

__all__ = ["main"]


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
    from .local import LocalModelServer

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


def _chat(args: argparse.Namespace) -> int:
    from .local import LocalModelServer, chat_client

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


def _load_type(spec: str) -> Any:
    """`package.module:Name` or `path/to/file.py:Name` (a dotted name after the colon is followed).

    The current directory is on the import path, as for `python -m`, so `mymod:Person` finds
    `./mymod.py`."""
    module_part, _, attribute = spec.rpartition(":")
    if not module_part or not attribute:
        raise UserError(f"--type must look like MODULE:TYPE or FILE.py:TYPE, got {spec!r}")
    try:
        module = _import(module_part)
    except UserError:
        raise
    except ModuleNotFoundError as error:
        raise UserError(
            f"--type: cannot import {module_part!r} ({error}); run from the directory that holds it, "
            "or give FILE.py:TYPE"
        ) from error
    except Exception as error:
        raise UserError(f"--type: importing {module_part} failed: {type(error).__name__}: {error}") from error
    value: Any = module
    for name in attribute.split("."):
        if not hasattr(value, name):
            raise UserError(f"--type: {module_part} has no attribute {attribute!r}")
        value = getattr(value, name)
    return value


def _import(module_part: str) -> ModuleType:
    if not module_part.endswith(".py"):
        if os.getcwd() not in sys.path and "" not in sys.path:
            sys.path.insert(0, os.getcwd())
        return importlib.import_module(module_part)
    path = Path(module_part)
    if not path.is_file():
        raise UserError(f"--type: no such file {path}")
    spec = importlib.util.spec_from_file_location(path.stem, path)
    if spec is None or spec.loader is None:
        raise UserError(f"--type: cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[path.stem] = module
    spec.loader.exec_module(module)
    return module


def _check_type(spec: str, output_type: Any) -> None:
    """Build the structured-output feature now, so an unusable type fails before any server starts."""
    from .middleware.structured_output import StructuredOutput

    try:
        StructuredOutput(output_type)
    except UserError as error:
        reason, strict_advice, _ = str(error).partition(" Pass strict=False")  # the command has no such option
        advice = " Use a type whose keys are all named (a pydantic model, a dataclass)." if strict_advice else ""
        raise UserError(f"--type {spec}: {reason}{advice}") from error


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
    from .local import MODEL_ID

    output_type = _load_type(args.type)
    _check_type(args.type, output_type)
    if args.input is not None:  # many inputs: so_middleware.batch
        return run_batch(args, output_type)
    text = _read_text(args)
    key = _KEYS[args.provider]
    hosted = not args.local and bool(os.environ.get(key))
    if hosted and args.threads is not None:
        raise UserError(f"--threads sets the embedded model's threads; add --local, or drop --threads ({key} is set)")
    if not hosted and args.model not in (None, MODEL_ID):
        why = "--local was given" if args.local else f"{key} is not set"
        raise UserError(
            f"--model {args.model}: {why}, so the embedded model {MODEL_ID} would answer; "
            f"drop --model, or set {key} to use the hosted API"
        )
    started = time.perf_counter()
    if hosted:
        _progress(f"using the hosted {args.provider} API")
        response = asyncio.run(
            _run_extract(_hosted_client(args.provider, args.model), text, output_type, args.stream, args.max_tokens)
        )
    else:
        from .local import LocalModelServer, chat_client

        _progress(f"using the embedded local model on the {_ROUTES[args.provider]} route")
        with LocalModelServer(threads=args.threads, on_progress=_progress) as server:
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


class _Parser(argparse.ArgumentParser):
    """argparse, with its errors on one line (the usage is one `--help` away)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def _count(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"must be a positive whole number, got {text!r}")
    return int(text)


def _port(text: str) -> int:
    if not text.isdigit() or not 1 <= int(text) <= 65535:
        raise argparse.ArgumentTypeError(f"must be a port number from 1 to 65535, got {text!r}")
    return int(text)


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="so-middleware", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"so-middleware {__version__}")
    parser.add_argument("--debug", action="store_true", help="show the traceback of an error")
    common = _Parser(add_help=False)
    common.add_argument(
        "--debug", action="store_true", default=argparse.SUPPRESS, help="show the traceback of an error"
    )
    embedded = _Parser(add_help=False)
    embedded.add_argument(
        "--threads", type=_count, default=None,
        help="threads of the embedded llama-server (default: $SO_MIDDLEWARE_THREADS, else half the CPUs, at most 4)",
    )  # fmt: skip
    commands = parser.add_subparsers(dest="command", required=True)

    serve = commands.add_parser(
        "serve", parents=[common, embedded], help="run the embedded local model server until Ctrl-C"
    )
    serve.add_argument("--port", type=_port, default=None, help="port on 127.0.0.1 (default: a free one)")
    serve.set_defaults(run=_serve)

    chat = commands.add_parser("chat", parents=[common, embedded], help="one chat call to the embedded local model")
    chat.add_argument(
        "prompt", nargs="?", default="Say hello in one short sentence.", help="what to say (default: %(default)r)"
    )
    chat.add_argument("--max-tokens", type=_count, default=48, help="the answer's token limit (default: %(default)s)")
    chat.set_defaults(run=_chat)

    extract = commands.add_parser(
        "extract", parents=[common, embedded], help="extract a typed value from text and print it as JSON"
    )
    extract.add_argument(
        "--type", required=True,
        help="MODULE:TYPE or FILE.py:TYPE, e.g. mymod:Person (./mymod.py) or examples/people.py:Person",
    )  # fmt: skip
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
    extract.add_argument(
        "--max-tokens", type=_count, default=256, help="each answer's token limit (default: %(default)s)"
    )
    extract.set_defaults(run=_extract)
    add_batch_arguments(extract)

    # every argument after `gateway` goes to so_middleware.gateway's own parser (no '-' options here)
    gateway = commands.add_parser(
        "gateway", prefix_chars="+", help="the OpenAI Responses API over a Chat Completions backend"
    )
    gateway.add_argument("gateway_args", nargs="*")
    gateway.set_defaults(run=lambda args: importlib.import_module(".gateway._cli", __package__).main(args.gateway_args))
    return parser


_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^/\s@]+@")


def _one_line(error: BaseException, args: argparse.Namespace) -> str:
    """The error as one line: its cause and what to do."""
    from .local import PortInUseError

    lines = str(error).strip().splitlines() or [type(error).__name__]
    more = " (--debug shows more)" if len(lines) > 1 else ""
    message = f"{lines[0]}{more}"
    provider = getattr(args, "provider", "openai")
    if isinstance(error, PortInUseError):
        message = f"port {error.port} is already in use: pick another with --port N, or leave --port out for a free one"
    elif _is_sdk_error(error, "APIConnectionError"):  # APITimeoutError included
        message = (
            f"cannot reach the hosted {provider} API ({type(error).__name__}: {lines[0]}): check the network "
            f"(and {provider.split('-')[0].upper()}_BASE_URL if set), or pass --local to use the embedded model"
        )
    elif _is_sdk_error(error, "AuthenticationError"):
        message = f"the hosted {provider} API refused the key ({lines[0]}): check {_KEYS[provider]}, or pass --local"
    elif _is_sdk_error(error, "APIStatusError"):
        message = f"the hosted {provider} API answered {type(error).__name__} ({lines[0]}){more}"
    elif not isinstance(error, (UserError, LocalServerError)):
        message = f"{type(error).__name__}: {message}"
    if isinstance(error, OutputError) and error.attempts:
        message += f" [{len(error.attempts)} attempt(s); --debug shows their text]"
    return _USERINFO.sub(r"\1***@", message)


def _is_sdk_error(error: BaseException, name: str) -> bool:
    """Whether `error` is the openai or anthropic SDK's exception `name` (or a subclass)."""
    for sdk in ("openai", "anthropic"):
        cls = getattr(sys.modules.get(sdk), name, None)
        if isinstance(cls, type) and isinstance(error, cls):
            return True
    return False


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `so-middleware` console script (and `python -m so_middleware`).

    Returns the exit code: 0, 1 for a failed command, 2 for bad arguments or a local-server
    problem, 130 when interrupted (Ctrl-C or SIGTERM).
    """
    args = _parser().parse_args(argv)
    _stop_on_signals()
    try:
        return int(args.run(args))
    except KeyboardInterrupt:
        _progress("interrupted")
        return 130
    except Exception as error:
        if args.debug:
            traceback.print_exc()
            for attempt in getattr(error, "attempts", None) or []:
                _progress(f"  attempt {attempt.index + 1} [{attempt.strategy}]: {attempt.text!r}")
        _progress(f"error: {_one_line(error, args)}")
        return 2 if isinstance(error, LocalServerError) else 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
