"""Getting a RAC engine ready for LlamaIndex: from the user's engine or keywords, with
LlamaIndex's results understood and its control-flow exceptions let through."""

from __future__ import annotations

from typing import Any

import rac
from rac_llamaindex.plugin import PLUGIN_NAME, LlamaIndexPlugin


def _waiting_for_event() -> tuple[type[BaseException], ...]:
    """The exception a workflow step raises to pause for a human's answer (llama-index-workflows
    2.9 and later), if this version has it."""
    try:
        from workflows.runtime.types.results import WaitingForEvent
    except ImportError:  # pragma: no cover - older workflows
        return ()
    return (WaitingForEvent,)


def engine_for(engine: rac.RAC | None, config: dict[str, Any]) -> rac.RAC:
    """``engine`` prepared for LlamaIndex, or a new engine built from ``config`` (the keywords
    of :class:`rac.RAC`); giving both is an error. ``tools`` in ``config`` (compensators the model
    is not offered, LlamaIndex tools or functions) are registered once the engine exists."""
    if engine is not None:
        if config:
            raise rac.ConfigurationError(
                f"pass either rac=<engine> or rac.RAC keywords, not both (got {sorted(config)}); "
                "an engine's own settings apply to every agent that shares it")
        if not isinstance(engine, rac.RAC):
            raise rac.ConfigurationError(
                f"rac= must be a rac.RAC engine, got {type(engine).__name__}")
    else:
        tools = config.pop("tools", None)
        plugins = [p for p in config.pop("plugins", ()) if not isinstance(p, LlamaIndexPlugin)]
        engine = rac.RAC(plugins=[LlamaIndexPlugin(), *plugins], **config)
        if tools:  # checked as the agents' tools are added: those are not known yet
            engine.tools.update({t.name: t for t in map(engine.adapt_tool, tools)})
    prepare(engine)
    return engine


def prepare(engine: rac.RAC) -> None:
    """Teach ``engine`` LlamaIndex's results and control flow (idempotent)."""
    if not any(isinstance(p, LlamaIndexPlugin) for p in engine.plugin_manager.get_plugins()):
        engine.register_plugin(LlamaIndexPlugin(), name=PLUGIN_NAME)
    # A step pausing for a human's answer is the workflow's control flow, not a tool failing.
    engine.add_passthrough(*_waiting_for_event())
