"""Getting the RAC engine an adapter object uses, and teaching it LangGraph."""

from __future__ import annotations

from typing import Any

from langgraph.errors import GraphBubbleUp

import rac
from rac.adapters import engine_for
from rac_langgraph.results import PLUGIN_NAME, HandOff, InvalidToolCall, LangGraphResults
from rac_langgraph.tools import as_rac_tools


def build_engine(engine: rac.RAC | None, agent_id: str | None, config: dict[str, Any]) -> rac.RAC:
    """``engine`` (with ``tools`` from ``config`` registered), or a new :class:`rac.RAC` made from
    the keywords in ``config``; both is refused (see :func:`rac.adapters.engine_for`).
    LangChain tools in ``tools`` are converted."""
    tools = config.pop("tools", None)
    engine = engine_for(engine, config, plugin=LangGraphResults(), plugin_name=PLUGIN_NAME,
                        passthrough=(GraphBubbleUp, InvalidToolCall, HandOff),
                        agent_id=agent_id)
    if tools:  # checked as they are added: the agent's own tools are not known yet
        engine.register_tools(as_rac_tools(tools))
    return engine


def prepare(engine: rac.RAC) -> None:
    """Teach ``engine`` LangGraph's results and control flow (idempotent): tool messages and
    commands are unwrapped for the log, and interrupts, parent commands, hand-offs and refused
    calls pass through without counting as failures."""
    build_engine(engine, None, {})
