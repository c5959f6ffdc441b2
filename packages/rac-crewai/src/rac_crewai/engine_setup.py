"""Getting a RAC engine ready for CrewAI: from the user's engine or keywords, with CrewAI's
result type understood and its control-flow exceptions let through."""

from __future__ import annotations

from typing import Any

from crewai.hooks.dispatch import HookAborted
from crewai.tools.tool_failure import ToolExecutionFailedError

import rac
from rac_crewai.plugin import PLUGIN_NAME, CrewAIPlugin


def engine_for(engine: rac.RAC | None, config: dict[str, Any]) -> rac.RAC:
    """``engine`` prepared for CrewAI, or a new engine built from ``config`` (the keywords of
    :class:`rac.RAC`); giving both is an error."""
    if engine is not None and config:
        raise rac.ConfigurationError(
            f"pass either a rac.RAC engine or its keywords, not both (got {sorted(config)})")
    if engine is None:
        plugins = [p for p in config.pop("plugins", ()) if not isinstance(p, CrewAIPlugin)]
        engine = rac.RAC(plugins=[CrewAIPlugin(), *plugins], **config)
    elif not isinstance(engine, rac.RAC):
        raise rac.ConfigurationError(f"rac must be a rac.RAC engine, got {type(engine).__name__}")
    if not any(isinstance(p, CrewAIPlugin) for p in engine.plugin_manager.get_plugins()):
        engine.register_plugin(CrewAIPlugin(), name=PLUGIN_NAME)
    # A hook abort or a tool failure raised under tool_failure_policy="raise" is CrewAI
    # stopping the run, not a tool failing: RAC must not retry it or count it as one.
    engine.add_passthrough(HookAborted, ToolExecutionFailedError)
    return engine
