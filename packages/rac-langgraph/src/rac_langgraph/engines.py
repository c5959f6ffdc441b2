"""Getting the RAC engine an adapter object uses, and teaching it LangGraph."""

from __future__ import annotations

from typing import Any

from langgraph.errors import GraphBubbleUp

import rac
from rac_langgraph.results import PLUGIN_NAME, InvalidToolCall, LangGraphResults
from rac_langgraph.tools import as_rac_tools


def build_engine(engine: rac.RAC | None, agent_id: str | None, config: dict[str, Any]) -> rac.RAC:
    """``engine`` (with ``tools`` from ``config`` registered), or a new :class:`rac.RAC` made from
    the keywords in ``config``. LangChain tools in ``tools`` are converted; other RAC keywords
    next to an engine are refused, since they would silently be ignored."""
    tools = config.pop("tools", None)
    if engine is not None:
        if config:
            raise rac.ConfigurationError(
                f"pass either rac=<engine> or RAC keywords, not both (got {sorted(config)}); "
                "the engine's own settings apply to every agent that shares it")
        if tools:
            engine.register_tools(as_rac_tools(tools))
    else:
        if agent_id is not None:
            config.setdefault("agent_id", agent_id)
        engine = rac.RAC(**config)
        if tools:  # checked as they are added: the agent's own tools are not known yet
            engine.register_tools(as_rac_tools(tools))
    prepare(engine)
    return engine


def prepare(engine: rac.RAC) -> None:
    """Teach ``engine`` LangGraph's results and control flow (idempotent): tool messages and
    commands are unwrapped for the log, and interrupts, parent commands and refused calls pass
    through without counting as failures."""
    if engine.plugin_manager.get_plugin(PLUGIN_NAME) is None:
        engine.register_plugin(LangGraphResults(), name=PLUGIN_NAME)
    engine.add_passthrough(GraphBubbleUp, InvalidToolCall)
