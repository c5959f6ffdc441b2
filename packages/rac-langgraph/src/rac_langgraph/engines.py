"""Getting the RAC engine an adapter object uses, and teaching it LangGraph."""

from __future__ import annotations

from typing import Any

from langgraph.errors import GraphBubbleUp

import rac
from rac.adapters import engine_for
from rac_langgraph.results import PLUGIN_NAME, HandOff, InvalidToolCall, LangGraphResults
from rac_langgraph.tools import as_rac_tools


def build_engine(engine: rac.RAC | None, agent_id: str | None, config: dict[str, Any]) -> rac.RAC:
    """``engine`` (with ``tools`` from ``config`` offered to it), or a new :class:`rac.RAC` made
    from the keywords in ``config``; both is refused (see :func:`rac.adapters.engine_for`).
    ``tools`` are offered to RAC, never to the model (:func:`rac.adapters.offer_to_rac`):
    LangChain tools are converted, and those of langchain-mcp-adapters keep their MCP
    declarations."""
    return engine_for(engine, config, plugin=LangGraphResults(), plugin_name=PLUGIN_NAME,
                      passthrough=(GraphBubbleUp, InvalidToolCall, HandOff),
                      agent_id=agent_id, convert_tool=_convert)


def _convert(tool: Any) -> Any:
    [converted] = as_rac_tools([tool])
    return converted


def prepare(engine: rac.RAC) -> None:
    """Teach ``engine`` LangGraph's results and control flow (idempotent): tool messages and
    commands are unwrapped for the log, and interrupts, parent commands, hand-offs and refused
    calls pass through without counting as failures."""
    build_engine(engine, None, {})
