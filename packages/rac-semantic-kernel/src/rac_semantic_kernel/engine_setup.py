"""The engine an ``enable_rac`` call uses: the one given, or one built from keywords, taught
Semantic Kernel's control flow."""

from __future__ import annotations

from typing import Any

from semantic_kernel.exceptions import OperationCancelledException

import rac
from rac.adapters import declare_control_flow
from rac.adapters import engine_for as kit_engine_for

#: SK's own control flow: a function raising it cancels the operation, it does not fail.
CONTROL_FLOW: tuple[type[BaseException], ...] = (OperationCancelledException,)


def engine_for(engine: rac.RAC | None, config: dict[str, Any]) -> rac.RAC:
    """``engine``, or a new :class:`rac.RAC` from ``config`` (its keywords); both is an error,
    as the keywords would silently not apply to a shared engine. ``tools`` in ``config`` are
    registered with the engine (plain functions or :class:`rac.Tool`: compensators that are not
    kernel functions)."""
    found = kit_engine_for(engine, config, passthrough=CONTROL_FLOW)
    declare_control_flow(found)  # a call a user's filter answered for is refused, not failed
    return found
