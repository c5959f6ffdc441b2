"""Structured events: every state change RAC makes is one structlog event.

Where they go:

* if your application configures structlog (``structlog.configure(...)``), RAC's events go
  through your configuration, like any other structlog logger named ``rac``;
* otherwise they go to the standard-library logger ``"rac"``, so RAC stays silent below
  ``WARNING`` unless you configure logging (``logging.getLogger("rac").setLevel("INFO")``).

Values are redacted before they are emitted (see :mod:`rac.serialize`), and
:func:`redact_processor` can be added to your own processor chain for the same guarantee.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import MutableMapping
from typing import Any

from rac.serialize import to_jsonable

_STDLIB_NAME = "rac"
_stdlib_loggers: dict[int, Any] = {}
_std = logging.getLogger(_STDLIB_NAME)


def logger(**context: Any) -> Any:
    """A bound logger for RAC's events, chosen as described in the module docstring (read the
    configuration when called: runs take one when they start)."""
    import structlog

    if structlog.is_configured():
        return structlog.get_logger(_STDLIB_NAME).bind(**context)
    std = _std
    level = std.getEffectiveLevel()
    base = _stdlib_loggers.get(level)
    if base is None:
        base = structlog.wrap_logger(
            std, wrapper_class=structlog.make_filtering_bound_logger(level),
            processors=[structlog.processors.KeyValueRenderer(key_order=["event", "run_id"])])
        _stdlib_loggers[level] = base
    return base.bind(**context)


def run_logger(**context: Any) -> tuple[Any, bool]:
    """A bound logger as :func:`logger` gives, and whether its info-level events go anywhere.

    Runs emit many info events (one per record written); when the standard-library logger
    ``"rac"`` drops them anyway (its default), a run skips building them. Under an
    application's structlog configuration every event is built and handed over."""
    import structlog

    if structlog.is_configured():
        return structlog.get_logger(_STDLIB_NAME).bind(**context), True
    return logger(**context), _std.getEffectiveLevel() <= logging.INFO


#: wrapper class of the application's structlog configuration -> whether it emits info events
_STRUCTLOG_INFO: dict[int, tuple[Any, bool]] = {}


_PUBLIC_API = object()
_STRUCTLOG_CONFIG: Any = None


def _structlog_config() -> Any:
    """structlog's configuration object, read directly (or _PUBLIC_API if it has none)."""
    global _STRUCTLOG_CONFIG
    import structlog  # noqa: F401 - loads structlog._config

    config = getattr(sys.modules.get("structlog._config"), "_CONFIG", None)
    if config is None or not hasattr(config, "is_configured") \
            or not hasattr(config, "default_wrapper_class"):
        config = _PUBLIC_API
    _STRUCTLOG_CONFIG = config
    return config


def info_enabled() -> bool:
    """Whether RAC's info-level events would go anywhere now: the ``"rac"`` logger's level
    under the standard library, or, under an application's structlog configuration, its
    bound logger's ``is_enabled_for`` (True when it has none). Cheap: runs ask when they
    start and skip building events nobody receives."""
    config = _STRUCTLOG_CONFIG or _structlog_config()
    if config is not _PUBLIC_API:  # structlog's own record (get_config() copies all of it)
        if not config.is_configured:
            return _std.isEnabledFor(logging.INFO)
        wrapper = config.default_wrapper_class
    else:
        import structlog as public

        if not public.is_configured():
            return _std.isEnabledFor(logging.INFO)
        wrapper = public.get_config().get("wrapper_class")
    hit = _STRUCTLOG_INFO.get(id(wrapper))
    if hit is None or hit[0] is not wrapper:
        import structlog

        probe = structlog.get_logger(_STDLIB_NAME).bind()
        enabled_for = getattr(probe, "is_enabled_for", None)
        hit = (wrapper, bool(enabled_for(logging.INFO)) if callable(enabled_for) else True)
        if len(_STRUCTLOG_INFO) < 64:
            _STRUCTLOG_INFO[id(wrapper)] = hit
    return hit[1]


def emit(event: str, *, level: str = "info", **fields: Any) -> None:
    """Emit one event outside a run's own logger (rollbacks, proposals, warnings). Callers pass
    values already redacted by :func:`rac.serialize.store_value`; error texts are redacted when
    they are recorded."""
    getattr(logger(), level)(event, **fields)


def redact_processor(logger: Any, method: str, event_dict: MutableMapping[str, Any]
                     ) -> MutableMapping[str, Any]:
    """A structlog processor that redacts secret-looking keys and card numbers."""
    redacted = to_jsonable(dict(event_dict))
    event_dict.clear()
    event_dict.update(redacted)
    return event_dict
