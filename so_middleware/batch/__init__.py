"""Many inputs: `extract_many` runs one typed extraction per input, bounded, paced and resumable.

Example:
    from so_middleware.batch import extract_many

    run = extract_many(adapter, "inputs.jsonl", Person, output="out.jsonl", concurrency=16, requests_per_minute=500)
    async for result in run:  # completion order
        print(result.id, result.value if result.ok else type(result.error).__name__)
    print(run.summary)  # done, failed by error type, skipped, tokens, cost
    for result in read_results("out.jsonl", Person):  # the file read back, typed
        ...

A re-run with the same `output` skips the ids already there; `extract_batch` does the same on
OpenAI's or Anthropic's batch API; `so-middleware extract --input ...` is the command-line form.
"""

# The command line's part (`so-middleware extract --input`), for so_middleware.cli: not in __all__.
from ._cli import add_batch_arguments as add_batch_arguments
from ._cli import run_batch as run_batch
from ._cli import server_client as server_client
from ._engines import BatchJobError, extract_batch
from ._inputs import InputSource, Item, read_inputs
from ._reader import RecordedError, read_results
from ._results import ItemResult, ResultLog, ResultsWriteError
from ._run import BatchRun, ServerUnreachableError, extract_many, extract_many_sync
from ._setup import build_client
from ._summary import BatchSummary, price_of

__all__ = [
    "BatchJobError",
    "BatchRun",
    "BatchSummary",
    "InputSource",
    "Item",
    "ItemResult",
    "RecordedError",
    "ResultLog",
    "ResultsWriteError",
    "ServerUnreachableError",
    "build_client",
    "extract_batch",
    "extract_many",
    "extract_many_sync",
    "price_of",
    "read_inputs",
    "read_results",
]
