"""`AgentSpans`: a layer that can open an agent span around a run. A leaf module.

Agents look the service up with `client.get_service(AgentSpans)`, so the agents layer needs no
knowledge of the telemetry layer that provides it.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Any

__all__ = ["AgentSpans"]


class AgentSpans:
    """Base of the layers that parent a run's chat spans under an agent span (telemetry does).

    Example:
        spans = client.get_service(AgentSpans)
        with spans.agent_span("planner", model="gpt-4o") if spans else contextlib.nullcontext():
            ...
    """

    def agent_span(self, agent_name: str | None, *, model: str | None = None) -> AbstractContextManager[Any]:
        """A context manager around one agent run; yields the span (or None when not recording)."""
        raise NotImplementedError
