"""Structured events: every state change RAC makes is one structlog event on the ``rac`` logger.

RAC does not configure structlog; configure it as your application does (RAC's CLI sends
events below WARNING nowhere unless asked). Values are redacted before they are emitted, and
:func:`redact_processor` can be added to your own processor chain for the same guarantee.
"""

from __future__ import annotations

from collections.abc import MutableMapping
from typing import Any

from rac.serialize import to_jsonable

_logger: Any = None


def logger() -> Any:
    """RAC's structlog logger (structlog is imported on first use, keeping ``import rac`` fast)."""
    global _logger
    if _logger is None:
        import structlog

        _logger = structlog.get_logger("rac")
    return _logger


def emit(event: str, *, level: str = "info", **fields: Any) -> None:
    """Emit one structlog event. Callers pass values already redacted by
    :func:`rac.serialize.store_value`; error texts are redacted when they are recorded."""
    getattr(_logger or logger(), level)(event, **fields)


def redact_processor(logger: Any, method: str, event_dict: MutableMapping[str, Any]
                     ) -> MutableMapping[str, Any]:
    """A structlog processor that redacts secret-looking keys and card numbers."""
    redacted = to_jsonable(dict(event_dict))
    event_dict.clear()
    event_dict.update(redacted)
    return event_dict
