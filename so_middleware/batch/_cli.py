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
import asyncio
import os
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ..core import UserError, redact_url
from ._engines import engine_name, extract_batch
from ._run import BatchRun, BatchSummary, extract_many

__all__ = ["add_batch_arguments", "run_batch"]

_KEYS = {"openai": "OPENAI_API_KEY", "openai-responses": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY"}
_ROUTES = {"openai": "chat", "openai-responses": "responses", "anthropic": "anthropic"}
_DEFAULT_MODELS = {"openai": "gpt-4o-mini", "openai-responses": "gpt-4o-mini", "anthropic": "claude-haiku-4-5"}


def add_batch_arguments(extract: argparse.ArgumentParser) -> None:
    """Add the batch options to the `extract` sub-command."""
    group = extract.add_argument_group("many inputs (with --input)")
    group.add_argument("--input", help="a .jsonl or .csv file (fields id, text) or a directory of text files")
    group.add_argument(
        "--output", help="the JSONL results file; a re-run resumes from it (default: INPUT.results.jsonl)"
    )
    group.add_argument("--concurrency", type=int, default=8, help="calls in flight at most (default 8)")
    group.add_argument("--rpm", type=float, help="requests per minute at most")
    group.add_argument("--tpm", type=float, help="tokens per minute at most")
    group.add_argument("--retry-failed", action="store_true", help="run the items that failed in an earlier run again")
    group.add_argument(
        "--engine",
        choices=("direct", "openai-batch", "anthropic-batch"),
        default="direct",
        help="direct calls (default), or the provider's batch API: half price, within 24 hours",
    )
    group.add_argument("--poll-interval", type=float, default=30.0, help="seconds between batch status checks")
    group.add_argument("--instructions", help="a system prompt for every item")
    group.add_argument("--max-retries", type=int, default=2, help="re-asks of an invalid answer (default 2)")


def _progress(message: str) -> None:
    print(f"[so-middleware] {message}", file=sys.stderr, flush=True)


def run_batch(args: argparse.Namespace, output_type: Any) -> int:
    """Run `extract --input ...`; the exit code (0: every input has a result, 130: interrupted)."""
    if args.text is not None or args.file is not None or args.stream:
        raise UserError("--input runs many items: --text, --file and --stream do not apply")
    output = Path(args.output or f"{Path(args.input).with_suffix('')}.results.jsonl")
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
                args.input,
                output_type,
                concurrency=args.concurrency,
                requests_per_minute=args.rpm,
                tokens_per_minute=args.tpm,
                **common,
            )
        elif engine_name(client) != args.engine:
            raise UserError(f"--engine {args.engine} needs that provider's hosted API (its key set, or --base-url)")
        else:
            run = extract_batch(client, args.input, output_type, poll_interval=args.poll_interval, **common)
        total = max(0, _count_inputs(Path(args.input)) - run.already_done)
        try:
            asyncio.run(_consume(run, total))
        except KeyboardInterrupt:
            _progress(f"interrupted: {run.summary.finished} results written to {output}; run again to resume")
            return 130
    _report(run.summary, output)
    return 0


def _report(summary: BatchSummary, output: Path) -> None:
    _progress(f"{summary}; results in {output}")
    for line in summary.unattributed_lines:  # their items failed; these lines are kept nowhere else
        _progress(f"unattributed batch result line: {line}")


async def _consume(run: BatchRun[Any], total: int) -> None:
    show = _bar(total) if sys.stderr.isatty() else _lines(total)
    show(run.summary)
    async for _result in run:
        show(run.summary)
    show(None)


def _bar(total: int) -> Callable[[BatchSummary | None], None]:
    from tqdm import tqdm

    bar = tqdm(total=total, unit="item", file=sys.stderr, dynamic_ncols=True, smoothing=0.1)

    def show(summary: BatchSummary | None) -> None:
        if summary is None:
            bar.close()
            return
        bar.update(summary.finished - bar.n)
        bar.set_postfix(failed=sum(summary.failed.values()), refresh=False)

    return show


def _lines(total: int, every: float = 2.0) -> Callable[[BatchSummary | None], None]:
    started = shown = time.monotonic()

    def show(summary: BatchSummary | None) -> None:
        nonlocal shown
        now = time.monotonic()
        if summary is None or now - shown < every:
            return
        shown = now
        rate = summary.finished / (now - started)
        eta = f"{(total - summary.finished) / rate:.0f}s" if rate else "?"
        _progress(
            f"{summary.finished}/{total} items, {sum(summary.failed.values())} failed, {rate:.1f} items/s, ETA {eta}"
        )

    return show


def _count_inputs(path: Path) -> int:
    if path.is_dir():
        return sum(1 for p in path.rglob("*") if p.is_file() and not p.name.startswith("."))
    with path.open("rb") as lines:
        count = sum(1 for line in lines if line.strip())
    return count - 1 if path.suffix.lower() == ".csv" else count


@contextmanager
def _client(args: argparse.Namespace) -> Iterator[Any]:
    provider = args.provider
    key = os.environ.get(_KEYS[provider])
    if args.base_url:
        import openai

        from ..openai import adapter_for

        sdk = openai.AsyncOpenAI(base_url=args.base_url, api_key=key or "none")
        _progress(f"using the server at {redact_url(args.base_url)}")  # never its password
        yield adapter_for(
            sdk, model=args.model or "default", api="responses" if provider == "openai-responses" else "chat"
        )
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
