"""Test helpers: the scripted CrewAI model and the travel world as CrewAI tools (from
``rac_crewai.testing``), an engine on a virtual clock, and readers of what the agent was told."""

from __future__ import annotations

from typing import Any

import rac
from rac.testing import TRAVEL_COMPENSATIONS, TRAVEL_READ_ONLY, VirtualClock
from rac_crewai.testing import ScriptedLLM, world_tools

__all__ = ["ScriptedLLM", "engine", "last_tool_result", "runs_of", "told", "world_tools"]


def engine(**kw: Any) -> rac.RAC:
    """An in-memory engine for the travel world, on a virtual clock."""
    kw.setdefault("compensations", TRAVEL_COMPENSATIONS)
    kw.setdefault("read_only", TRAVEL_READ_ONLY)
    kw.setdefault("retry", rac.RetryPolicy(max_attempts=3, initial_delay=1.0, jitter=0.0))
    return rac.RAC(store="memory://", clock=VirtualClock(), load_entrypoints=False, **kw)


def told(llm: ScriptedLLM, tool_name: str) -> list[str]:
    """Every result of ``tool_name`` the model was shown, in order (one per call)."""
    out: dict[str, str] = {}
    for messages in llm.seen:
        for m in messages:
            if m.get("role") == "tool" and m.get("name") == tool_name:
                out.setdefault(m["tool_call_id"], str(m.get("content")))
    return list(out.values())


def last_tool_result(messages: list[dict[str, Any]]) -> str:
    """The content of the newest tool message."""
    return next(str(m["content"]) for m in reversed(messages) if m.get("role") == "tool")


def runs_of(eng: rac.RAC) -> list[rac.RunInfo]:
    """Every run in the engine's log."""
    return eng.store.list_runs()
