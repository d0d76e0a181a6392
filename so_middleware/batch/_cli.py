"""`so-middleware extract --input FILE --output FILE`: the batch form of `extract`.

    so-middleware extract --type examples/people.py:Person --input people.jsonl --output out.jsonl \
        --concurrency 16 [--rpm 500] [--tpm 200000] [--engine direct|openai-batch|anthropic-batch]

On the embedded local model unless the provider's key is set (or `--base-url` names a server).
A progress bar (items/s, ETA, failures) on a terminal, one plain line every few seconds
otherwise; the summary at the end. Run the same command again to resume: ids already in the
output are skipped (`--retry-failed` runs the failed ones again).
"""

from __future__ import annotations

import argparse
import math
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ..core import UserError, redact_url, run_interruptibly
from ._engines import engine_name, extract_batch
from ._inputs import checked_inputs
from ._progress import follow
from ._results import ResultLog
from ._run import BatchSummary, extract_many

__all__ = ["add_batch_arguments", "run_batch"]

_KEYS = {"openai": "OPENAI_API_KEY", "openai-responses": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY"}
_ROUTES = {"openai": "chat", "openai-responses": "responses", "anthropic": "anthropic"}
_DEFAULT_MODELS = {"openai": "gpt-4o-mini", "openai-responses": "gpt-4o-mini", "anthropic": "claude-haiku-4-5"}


def add_batch_arguments(extract: argparse.ArgumentParser) -> None:
    """Add the batch options to the `extract` sub-command."""
    group = extract.add_argument_group("many inputs (with --input)")
    group.add_argument("--input", help="a .jsonl or .csv file (fields id, text) or a directory of text files")
    group.add_argument("--id-field", default="id", help="the field of a .jsonl/.csv row holding its id (default id)")
    group.add_argument("--text-field", default="text", help="the field holding the text (default text)")
    group.add_argument(
        "--output", help="the JSONL results file; a re-run resumes from it (default: INPUT.results.jsonl)"
    )
    group.add_argument("--concurrency", type=_whole(1), default=8, help="calls in flight at most (default 8)")
    group.add_argument("--rpm", type=_rate, help="requests per minute at most")
    group.add_argument("--tpm", type=_rate, help="tokens per minute at most")
    group.add_argument("--retry-failed", action="store_true", help="run the items that failed in an earlier run again")
    group.add_argument(
        "--engine",
        choices=("direct", "openai-batch", "anthropic-batch"),
        default="direct",
        help="direct calls (default), or the provider's batch API: half price, within 24 hours",
    )
    group.add_argument("--poll-interval", type=_rate, default=30.0, help="seconds between batch status checks")
    group.add_argument("--instructions", help="a system prompt for every item")
    group.add_argument("--max-retries", type=_whole(0), default=2, help="re-asks of an invalid answer (default 2)")


def _whole(least: int) -> Callable[[str], int]:
    def parse(text: str) -> int:
        if not text.strip().isdigit() or int(text) < least:
            raise argparse.ArgumentTypeError(f"must be a whole number of at least {least}, got {text!r}")
        return int(text)

    return parse


def _rate(text: str) -> float:
    try:
        number = float(text)
    except ValueError:
        number = math.nan
    if not 0 < number < math.inf:  # nan fails too
        raise argparse.ArgumentTypeError(f"must be a positive number, got {text!r}")
    return number


def _progress(message: str) -> None:
    print(f"[so-middleware] {message}", file=sys.stderr, flush=True)


def run_batch(args: argparse.Namespace, output_type: Any) -> int:
    """Run `extract --input ...`; the exit code (0: every input has a result, 1: every item run
    failed, 130: interrupted)."""
    if args.text is not None or args.file is not None or args.stream:
        raise UserError("--input runs many items: --text, --file and --stream do not apply")
    output = Path(args.output or f"{Path(args.input).with_suffix('')}.results.jsonl")
    # Everything that can be checked is, before the embedded server starts: the inputs (every item,
    # ids unique, the fields there) and the output (writable, not locked by another run).
    items = list(checked_inputs(args.input, id_field=args.id_field, text_field=args.text_field))
    existed = output.exists()
    ResultLog(output).close()
    try:
        return _run_batch(args, output_type, items, output)
    finally:  # a run that ended before its first result leaves no empty file of its own behind
        if not existed and output.exists() and output.stat().st_size == 0:
            output.unlink()


def _run_batch(args: argparse.Namespace, output_type: Any, items: list[Any], output: Path) -> int:
    with _client(args) as client:
        common: dict[str, Any] = {
            "output": output,
            "retry_failed": args.retry_failed,
            "instructions": args.instructions,
            "max_retries": args.max_retries,
            "options": {"max_tokens": args.max_tokens, "temperature": 0},
        }
        if args.engine == "direct":
            run = extract_many(
                client,
                items,
                output_type,
                concurrency=args.concurrency,
                requests_per_minute=args.rpm,
                tokens_per_minute=args.tpm,
                **common,
            )
        elif engine_name(client) != args.engine:
            raise UserError(f"--engine {args.engine} needs that provider's hosted API (its key set, or --base-url)")
        else:
            run = extract_batch(client, items, output_type, poll_interval=args.poll_interval, **common)
        total = max(0, len(items) - run.already_done)
        try:
            run_interruptibly(follow(run, total, _progress))
        except KeyboardInterrupt:
            _progress(f"interrupted: {run.summary.finished} results written to {output}; run again to resume")
            return 130
    return _report(run.summary, output)


def _report(summary: BatchSummary, output: Path) -> int:
    """Print the summary; 1 when items ran and every one failed (a cause shared by all: the key,
    the server, the type), else 0."""
    _progress(f"{summary}; results in {output}")
    for line in summary.unattributed_lines:  # their items failed; these lines are kept nowhere else
        _progress(f"unattributed batch result line: {line}")
    if summary.skipped_failed:
        _progress(f"{summary.skipped_failed} item(s) failed in an earlier run: --retry-failed runs them again")
    every_one_failed = summary.done == 0 and sum(summary.failed.values()) > 0
    if every_one_failed:
        _progress(
            f"every item failed: see the errors in {output}; after fixing the cause, run again with --retry-failed"
        )
    return 1 if every_one_failed else 0


def server_client(provider: str, base_url: str, model: str | None, key: str | None) -> Any:
    """An adapter on the server at `base_url`, speaking `provider`'s protocol."""
    if provider == "anthropic":
        import anthropic

        from ..providers.anthropic import AnthropicChatClient

        root = base_url.removesuffix("/").removesuffix("/v1")  # the Anthropic SDK adds /v1/messages itself
        return AnthropicChatClient(anthropic.AsyncAnthropic(base_url=root, api_key=key or "none"), model or "default")
    import openai

    from ..providers.openai import adapter_for

    sdk = openai.AsyncOpenAI(base_url=base_url, api_key=key or "none")
    return adapter_for(sdk, model=model or "default", api=_ROUTES[provider])


@contextmanager
def _client(args: argparse.Namespace) -> Iterator[Any]:
    provider = args.provider
    key = os.environ.get(_KEYS[provider])
    if args.base_url:
        _progress(f"using the server at {redact_url(args.base_url)}")  # never its password
        yield server_client(provider, args.base_url, args.model, key)
    elif key and not args.local:
        _progress(f"using the hosted {provider} API")
        yield _hosted(provider, args.model or _DEFAULT_MODELS[provider])
    else:
        from ..local import LocalModelServer, chat_client

        _progress(f"using the embedded local model on the {_ROUTES[provider]} route")
        with LocalModelServer(on_progress=_progress) as server:
            yield chat_client(server, route=_ROUTES[provider])  # type: ignore[arg-type]


def _hosted(provider: str, model: str) -> Any:
    if provider == "anthropic":
        import anthropic

        from ..anthropic import AnthropicChatClient

        return AnthropicChatClient(anthropic.AsyncAnthropic(), model)
    import openai

    from ..openai import adapter_for

    return adapter_for(openai.AsyncOpenAI(), model=model, api=_ROUTES[provider])
