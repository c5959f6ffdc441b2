"""The engine an ``enable_rac`` call uses: the one given, or one built from keywords."""

from __future__ import annotations

from typing import Any

import rac
from rac_semantic_kernel.errors import PLUGIN_NAME, SemanticKernelErrors


def prepare(engine: rac.RAC) -> rac.RAC:
    """Teach ``engine`` Semantic Kernel's failures (once per engine)."""
    if engine.plugin_manager.get_plugin(PLUGIN_NAME) is None:
        engine.register_plugin(SemanticKernelErrors(), name=PLUGIN_NAME)
    return engine


def engine_for(engine: Any, config: dict[str, Any]) -> rac.RAC:
    """``engine``, or a new :class:`rac.RAC` from ``config`` (its keywords), prepared for
    Semantic Kernel; both is an error, as the keywords would silently not apply to a shared
    engine."""
    if engine is not None:
        if config:
            raise rac.ConfigurationError(
                f"pass either rac=<engine> or rac.RAC keywords, not both (got {sorted(config)}); "
                "a shared engine keeps its own settings")
        if not isinstance(engine, rac.RAC):
            raise rac.ConfigurationError(
                f"rac must be a rac.RAC engine, got {type(engine).__name__}")
        return prepare(engine)
    try:
        return prepare(rac.RAC(**config))
    except TypeError as e:
        raise rac.ConfigurationError(f"enable_rac: {e} (the keywords are those of rac.RAC)") \
            from None
