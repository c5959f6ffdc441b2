"""Structured events: every state change RAC makes is one structlog event.

Where they go:

* if your application configures structlog (``structlog.configure(...)``), RAC's events go
  through your configuration, like any other structlog logger named ``rac``;
* otherwise they go to the standard library's ``logging``, under a logger per area (below),
  all children of ``"rac"``: RAC stays silent below ``WARNING`` unless you configure logging
  (``logging.getLogger("rac").setLevel("INFO")``, or one area: ``"rac.recovery"``). Each
  record keeps the event's fields as structured attributes: ``record.rac_event`` (the event's
  name) and ``record.rac`` (a dict of its fields, ``run_id``, ``seq``, ``tool``, ``status``
  ...), so a JSON formatter (or your own filter) gets them as data; the message is the same
  fields as text (``event='rac.record' run_id='run-1' seq=2 ...``).

Areas (logger names): ``rac.run`` (a run's records and status, retries, reconciliation,
rollbacks), ``rac.recovery`` (recover, resume, resolve), ``rac.store`` (the log's stores),
``rac.resolver`` (pairs a model proposes), ``rac.mcp`` (MCP metadata), ``rac.plugins`` (a
plugin that failed), ``rac.ui`` (``rac ui``), ``rac.<adapter>`` for an adapter's own events
(``rac_langgraph.*`` -> ``rac.langgraph``), and ``rac`` for anything else.

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
_std = logging.getLogger(_STDLIB_NAME)
#: the area of a run's own events (what decides whether a run builds its info events)
_run_std = logging.getLogger("rac.run")


#: event name prefix -> the area (logger name) its records go to, first match wins
AREAS: tuple[tuple[str, str], ...] = (
    ("rac.recovery", "rac.recovery"), ("rac.resolve", "rac.recovery"),
    ("rac.store", "rac.store"), ("rac.pair", "rac.resolver"), ("rac.mcp", "rac.mcp"),
    ("rac.plugin", "rac.plugins"), ("rac.ui", "rac.ui"), ("rac.record", "rac.run"),
    ("rac.run", "rac.run"), ("rac.retry", "rac.run"), ("rac.reconcile", "rac.run"),
    ("rac.rollback", "rac.run"), ("rac.no_compensation", "rac.run"),
    ("rac.compensation", "rac.run"),
)
_LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "warning": logging.WARNING,
           "error": logging.ERROR, "critical": logging.CRITICAL}
_area_cache: dict[str, logging.Logger] = {}


def area_of(event: str) -> str:
    """The logger name an event goes to (see the module docstring)."""
    for prefix, area in AREAS:
        if event == prefix or event.startswith(prefix + ".") or event.startswith(prefix + "_"):
            return area
    if event.startswith("rac_") and "." in event:  # an adapter's: rac_langgraph.x
        return "rac." + event.split(".", 1)[0][len("rac_"):]
    return _STDLIB_NAME


def _std_for(event: str) -> logging.Logger:
    found = _area_cache.get(event)
    if found is None:
        found = logging.getLogger(area_of(event))
        if len(_area_cache) < 512:
            _area_cache[event] = found
    return found


class StdlibEvents:
    """RAC's events for the standard library's ``logging`` (no structlog configuration): one
    record per event, on the event's area logger, with the fields as structured attributes
    (``rac_event``, ``rac``) and as text in the message. ``bind`` adds context (a run's id)."""

    __slots__ = ("_context",)

    def __init__(self, context: dict[str, Any] | None = None) -> None:
        self._context = context or {}

    def bind(self, **context: Any) -> StdlibEvents:
        """The same events with more context."""
        return StdlibEvents({**self._context, **context})

    def _log(self, level: int, event: str, fields: dict[str, Any]) -> None:
        std = _std_for(event)
        if not std.isEnabledFor(level):
            return
        data = {**self._context, **fields}
        text = " ".join([f"event={event!r}", *(f"{k}={v!r}" for k, v in (
            sorted(data.items(), key=lambda kv: kv[0] != "run_id")))])
        std.log(level, text, extra={"rac_event": event, "rac": data}, stacklevel=3)

    def debug(self, event: str, **fields: Any) -> None:
        self._log(logging.DEBUG, event, fields)

    def info(self, event: str, **fields: Any) -> None:
        self._log(logging.INFO, event, fields)

    def warning(self, event: str, **fields: Any) -> None:
        self._log(logging.WARNING, event, fields)

    def error(self, event: str, **fields: Any) -> None:
        self._log(logging.ERROR, event, fields)

    def critical(self, event: str, **fields: Any) -> None:
        self._log(logging.CRITICAL, event, fields)


def logger(**context: Any) -> Any:
    """A bound logger for RAC's events, chosen as described in the module docstring (read the
    configuration when called: runs take one when they start)."""
    import structlog

    if structlog.is_configured():
        return structlog.get_logger(_STDLIB_NAME).bind(**context)
    return StdlibEvents(context)


def run_logger(**context: Any) -> tuple[Any, bool]:
    """A bound logger as :func:`logger` gives, and whether its info-level events go anywhere.

    Runs emit many info events (one per record written); when the standard-library logger
    ``"rac.run"`` drops them anyway (its default), a run skips building them. Under an
    application's structlog configuration every event is built and handed over."""
    import structlog

    if structlog.is_configured():
        return structlog.get_logger(_STDLIB_NAME).bind(**context), True
    return logger(**context), _run_std.isEnabledFor(logging.INFO)


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
    """Whether RAC's info-level events would go anywhere now: the ``"rac.run"`` logger's level
    under the standard library, or, under an application's structlog configuration, its
    bound logger's ``is_enabled_for`` (True when it has none). Cheap: runs ask when they
    start and skip building events nobody receives."""
    config = _STRUCTLOG_CONFIG or _structlog_config()
    if config is not _PUBLIC_API:  # structlog's own record (get_config() copies all of it)
        if not config.is_configured:
            return _run_std.isEnabledFor(logging.INFO)
        wrapper = config.default_wrapper_class
    else:
        import structlog as public

        if not public.is_configured():
            return _run_std.isEnabledFor(logging.INFO)
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
