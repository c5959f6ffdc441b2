"""Getting a RAC engine ready for CrewAI: from the user's engine or keywords, with CrewAI's
result type understood and its control-flow exceptions let through."""

from __future__ import annotations

from typing import Any

from crewai.hooks.dispatch import HookAborted
from crewai.tools.tool_failure import ToolExecutionFailedError

import rac
from rac.adapters import engine_for as kit_engine_for
from rac_crewai.plugin import PLUGIN_NAME, CrewAIPlugin


def engine_for(engine: rac.RAC | None, config: dict[str, Any]) -> rac.RAC:
    """``engine`` prepared for CrewAI, or a new engine built from ``config`` (the keywords of
    :class:`rac.RAC`); giving both is an error (see :func:`rac.adapters.engine_for`).

    A hook abort or a tool failure raised under ``tool_failure_policy="raise"`` is CrewAI
    stopping the run, not a tool failing: RAC must not retry it or count it as one.
    """
    return kit_engine_for(engine, config, plugin=CrewAIPlugin(), plugin_name=PLUGIN_NAME,
                          passthrough=(HookAborted, ToolExecutionFailedError))
