"""Getting a RAC engine ready for LlamaIndex: from the user's engine or keywords (the adapter
kit's :func:`rac.adapters.engine_for`), with LlamaIndex's results understood and its
control-flow exception let through."""

from __future__ import annotations

from typing import Any

import rac
from rac import adapters
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
    is not offered: LlamaIndex tools or functions) are registered with the engine.

    A step pausing for a human's answer (``ctx.wait_for_event`` raises ``WaitingForEvent``; the
    workflow runs the step again once the answer came) is control flow: RAC lets it through
    and never counts it as a failure."""
    return adapters.engine_for(engine, config, plugin=LlamaIndexPlugin(),
                               plugin_name=PLUGIN_NAME, passthrough=_waiting_for_event())
