"""Getting a RAC engine ready for CrewAI: from the user's engine or keywords, with CrewAI's
result type understood and its control-flow exceptions let through."""

from __future__ import annotations

from typing import Any

from crewai.hooks.dispatch import HookAborted
from crewai.tools.tool_failure import ToolExecutionFailedError

import rac
from rac_crewai.results import PLUGIN_NAME, ToolFailureResults


def engine_for(engine: rac.RAC | None, config: dict[str, Any]) -> rac.RAC:
    """``engine`` prepared for CrewAI, or a new engine built from ``config`` (the keywords of
    :class:`rac.RAC`); giving both is an error."""
    if engine is not None and config:
        raise rac.ConfigurationError(
            f"pass either a rac.RAC engine or its keywords, not both (got {sorted(config)})")
    if engine is None:
        engine = rac.RAC(**config)
    elif not isinstance(engine, rac.RAC):
        raise rac.ConfigurationError(f"rac must be a rac.RAC engine, got {type(engine).__name__}")
    if not engine.plugin_manager.has_plugin(PLUGIN_NAME):
        engine.register_plugin(ToolFailureResults(), name=PLUGIN_NAME)
        # A hook abort or a tool failure raised under tool_failure_policy="raise" is CrewAI
        # stopping the run, not a tool failing: RAC must not retry it or count it as one.
        engine.add_passthrough(HookAborted, ToolExecutionFailedError)
    return engine
