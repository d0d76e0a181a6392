"""What a batch run did, and what it cost where the model's price is known."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from decimal import Decimal

from .. import UsageDetails

__all__ = ["BatchSummary", "hosted_provider", "price_of"]

# A provider's price holds only on its own API: the same SDK pointed at a local or self-hosted
# server (llama.cpp, vLLM, a gateway) runs a model with no price, whatever name it is given.
_OFFICIAL_HOSTS = {"openai": "api.openai.com", "anthropic": "api.anthropic.com"}


@dataclass
class BatchSummary:
    """What a run did: `done`, `failed` (by error type), `skipped` (finished by an earlier run),
    the tokens used and, where the model's price is known (on the provider's own API), the `cost`
    in USD. `skipped_failed` counts the skipped items whose earlier result was an error
    (`retry_failed=True` runs them again).

    `unattributed_lines` (provider batch engines) are lines of a batch's results that named no
    request of it, as the provider wrote them: the items left unanswered failed with a 502 error
    pointing here."""

    done: int = 0
    failed: Counter[str] = field(default_factory=Counter)
    skipped: int = 0
    skipped_failed: int = 0
    usage: UsageDetails | None = None
    cost: Decimal | None = None
    seconds: float = 0.0
    unattributed_lines: list[str] = field(default_factory=list)

    @property
    def finished(self) -> int:
        """Items that ended in this run, with a value or an error."""
        return self.done + sum(self.failed.values())

    def __str__(self) -> str:
        failed = ", ".join(f"{kind} {count}" for kind, count in self.failed.most_common()) or "none"
        usage = self.usage or UsageDetails()
        cost = "unknown (no price for this model)" if self.cost is None else f"${self.cost:.4f}"
        rate = self.finished / self.seconds if self.seconds else 0.0
        unattributed = len(self.unattributed_lines)
        lines = f"; {unattributed} batch result line(s) named no request (unattributed_lines)" if unattributed else ""
        earlier = f", {self.skipped_failed} of them failed then" if self.skipped_failed else ""
        return (
            f"done {self.done}, failed {sum(self.failed.values())} ({failed}), skipped {self.skipped} "
            f"(already in the output{earlier}); tokens in={usage.input_tokens or 0} out={usage.output_tokens or 0}; "
            f"cost {cost}; {self.seconds:.1f}s, {rate:.1f} items/s{lines}"
        )


def hosted_provider(client: object) -> str | None:
    """The provider whose own API `client` calls (`"openai"`, `"anthropic"`), or None: a local or
    self-hosted server, or a client whose SDK and address are not known."""
    provider = getattr(client, "provider_name", None)
    base_url = getattr(getattr(client, "sdk_client", None), "base_url", None)
    host = getattr(base_url, "host", None)
    return provider if isinstance(provider, str) and host == _OFFICIAL_HOSTS.get(provider) else None


def price_of(usage: UsageDetails | None, model: str | None, provider: str | None) -> Decimal | None:
    """The USD price of `usage` on `model` from the `genai-prices` table; None when unknown."""
    if usage is None or not model:
        return None
    try:
        from genai_prices import Usage, calc_price
    except ImportError:  # the price table is optional (Python 3.11+)
        return None
    try:
        tokens = Usage(input_tokens=usage.input_tokens or 0, output_tokens=usage.output_tokens or 0)
        return calc_price(tokens, model, provider_id=provider).total_price
    except LookupError:
        return None
