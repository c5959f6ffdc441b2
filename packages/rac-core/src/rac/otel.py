"""OpenTelemetry spans for RAC (the core's ``otel`` extra): each run, tool call, attempt and
compensation is a span, built from RAC's notification hooks, so any engine gets them with one
line::

    from rac.otel import enable_tracing

    enable_tracing(engine)                 # the global tracer provider, or tracer_provider=...

Spans follow the OpenTelemetry GenAI semantic conventions for tool execution where they apply:
a tool call is ``execute_tool {tool}`` with ``gen_ai.operation.name="execute_tool"``,
``gen_ai.tool.name``, ``gen_ai.tool.type="function"`` and ``gen_ai.tool.call.id`` (the
framework's call id, when the log has it); a failure sets the span's status to ERROR and
``error.type``. RAC's own attributes are ``rac.run_id``, ``rac.seq``, ``rac.status``,
``rac.agent_id``, ``rac.effect``, ``rac.attempt`` and, on a compensation, ``rac.compensates``.
Values (arguments, results) are left out unless ``values=True``, and then only as the log keeps
them: redacted and capped.

Nesting: a run span is the child of whatever span is current when the run starts (a framework's
own: LangChain/LangGraph, CrewAI, LlamaIndex and Semantic Kernel each emit theirs); a tool call
is the child of the span current when it starts (the framework's tool span) or else of its run;
attempts are children of their call; a rollback is a span of its run, and its compensations
its children.
"""

from __future__ import annotations

import json
import threading
from typing import TYPE_CHECKING, Any

from rac.hookspecs import hookimpl
from rac.lifecycle import AT_REST
from rac.models import Record, RecordKind, RecordStatus, RunStatus

if TYPE_CHECKING:
    from rac.engine import RAC
    from rac.report import RecoveryReport

R = RecordStatus
_CALL_DONE = frozenset({R.COMPLETED, R.FAILED, R.IN_DOUBT, R.COMPENSATING, R.COMPENSATED,
                        R.COMPENSATION_FAILED, R.RESOLVED})
_RUN_DONE = AT_REST
INSTRUMENTATION = "rac"


class TracingPlugin:
    """The plugin :func:`enable_tracing` registers (register it yourself with
    ``engine.register_plugin(TracingPlugin(tracer))`` to choose the tracer)."""

    def __init__(self, tracer: Any, *, values: bool = False) -> None:
        from opentelemetry import trace

        self._trace = trace
        self.tracer = tracer
        self.values = values
        self._lock = threading.Lock()
        self._runs: dict[str, Any] = {}
        self._calls: dict[tuple[str, int], Any] = {}
        self._attempts: dict[tuple[str, int], Any] = {}
        self._rollbacks: dict[tuple[str, str], Any] = {}

    # -- runs -------------------------------------------------------------------------------------
    @hookimpl
    def rac_run_status_changed(self, run_id: str, status: RunStatus,
                               previous: RunStatus | None) -> None:
        with self._lock:
            span = self._runs.get(run_id)
            if span is None and status is RunStatus.RUNNING:
                span = self.tracer.start_span(f"rac.run {run_id}", attributes={
                    "rac.run_id": run_id, "rac.status": str(status)})
                self._runs[run_id] = span
                return
            if span is None:
                return
            span.set_attribute("rac.status", str(status))
            if status in _RUN_DONE:
                if status is RunStatus.NEEDS_ATTENTION:
                    span.set_status(self._trace.Status(self._trace.StatusCode.ERROR,
                                                       "needs attention: something may be live"))
                span.end()
                del self._runs[run_id]

    def _run_context(self, run_id: str) -> Any:
        span = self._runs.get(run_id)
        return self._trace.set_span_in_context(span) if span is not None else None

    # -- calls and compensations ----------------------------------------------------------------
    @hookimpl
    def rac_record_written(self, record: Record, previous: str | None) -> None:
        key = (record.run_id, record.seq)
        with self._lock:
            span = self._calls.get(key)
            if previous is None and span is None and record.status is R.PENDING:
                self._calls[key] = self._start_call(record)
                return
            if span is None:
                return
            span.set_attribute("rac.status", str(record.status))
            done = (record.status in (R.COMPLETED, R.FAILED) if record.kind is
                    RecordKind.COMPENSATION else record.status in _CALL_DONE)
            if not done:
                return
            self._end_attempt(key, record.error if record.status is not R.COMPLETED else None)
            if record.status in (R.FAILED, R.IN_DOUBT, R.COMPENSATION_FAILED):
                span.set_attribute("error.type", _error_type(record))
                span.set_status(self._trace.Status(self._trace.StatusCode.ERROR,
                                                   _redacted(record.error)))
            if self.values and record.result is not None:
                span.set_attribute("rac.result", _text(record.result))
            span.end()
            del self._calls[key]

    def _start_call(self, record: Record) -> Any:
        attrs: dict[str, Any] = {"rac.run_id": record.run_id, "rac.seq": record.seq,
                                 "rac.agent_id": record.agent_id, "rac.status": "pending",
                                 "rac.kind": str(record.kind)}
        if record.effect:
            attrs["rac.effect"] = record.effect
        if record.kind is RecordKind.COMPENSATION:
            attrs["rac.compensates"] = record.compensates if record.compensates is not None \
                else -1
            name = f"compensate {record.tool}"
            parent = self._rollback_context(record.run_id) or self._run_context(record.run_id)
        else:
            attrs.update({"gen_ai.operation.name": "execute_tool",
                          "gen_ai.tool.name": record.tool, "gen_ai.tool.type": "function"})
            call_id = getattr(record, "call_id", None)
            if call_id:
                attrs["gen_ai.tool.call.id"] = str(call_id)
            name = f"execute_tool {record.tool}"
            current = self._trace.get_current_span()
            parent = None if current.get_span_context().is_valid else \
                self._run_context(record.run_id)
        if self.values:
            attrs["rac.args"] = _text(record.args)
        return self.tracer.start_span(name, context=parent, attributes=attrs)

    # -- attempts --------------------------------------------------------------------------------
    @hookimpl
    def rac_attempt_started(self, record: Record) -> None:
        key = (record.run_id, record.seq)
        with self._lock:
            call = self._calls.get(key)
            if call is None:
                return
            self._end_attempt(key, None)
            self._attempts[key] = self.tracer.start_span(
                f"attempt {record.attempts} {record.tool}",
                context=self._trace.set_span_in_context(call),
                attributes={"rac.run_id": record.run_id, "rac.seq": record.seq,
                            "rac.attempt": record.attempts})

    @hookimpl
    def rac_attempt_finished(self, record: Record, error: BaseException | None) -> None:
        with self._lock:
            self._end_attempt((record.run_id, record.seq), error)

    def _end_attempt(self, key: tuple[str, int], error: BaseException | str | None) -> None:
        span = self._attempts.pop(key, None)
        if span is None:
            return
        if error is not None:
            from rac.serialize import redact_text

            span.set_attribute("error.type", type(error).__name__
                               if isinstance(error, BaseException) else "error")
            span.set_status(self._trace.Status(self._trace.StatusCode.ERROR,
                                               redact_text(str(error))[:200]))
        span.end()

    # -- rollbacks -------------------------------------------------------------------------------
    @hookimpl
    def rac_rollback_started(self, run_id: str, scope: str, seqs: list[int],
                             reason: str) -> None:
        with self._lock:
            self._rollbacks[(run_id, scope)] = self.tracer.start_span(
                "rac.rollback", context=self._run_context(run_id),
                attributes={"rac.run_id": run_id, "rac.scope": scope,
                            "rac.undoing": len(seqs), "rac.reason": reason[:200]})

    @hookimpl
    def rac_rollback_finished(self, run_id: str, scope: str, report: RecoveryReport) -> None:
        with self._lock:
            span = self._rollbacks.pop((run_id, scope), None)
            if span is None:
                return
            span.set_attribute("rac.status", str(report.status))
            span.set_attribute("rac.undone", len(report.compensated))
            span.set_attribute("rac.left_live", len(report.left_live))
            if not report.clean:
                span.set_status(self._trace.Status(self._trace.StatusCode.ERROR,
                                                   f"{len(report.left_live)} may still be live"))
            span.end()

    def _rollback_context(self, run_id: str) -> Any:
        for (rid, _), span in reversed(list(self._rollbacks.items())):
            if rid == run_id:
                return self._trace.set_span_in_context(span)
        return None


def _redacted(text: str | None) -> str:
    from rac.serialize import redact_text

    return redact_text(text or "")[:200]


def _error_type(record: Record) -> str:
    if record.status is R.IN_DOUBT:
        return "in_doubt"
    if record.status is R.COMPENSATION_FAILED:
        return "compensation_failed"
    return (record.error or "error").split(":", 1)[0][:60]


def _text(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    return text[:2000]


def enable_tracing(engine: RAC, *, tracer_provider: Any = None,
                   values: bool = False) -> TracingPlugin:
    """Emit OpenTelemetry spans for ``engine``'s runs (see the module docstring); returns the
    plugin. Needs ``opentelemetry-api`` (``pip install './packages/rac-core[otel]'``)."""
    try:
        from opentelemetry import trace
    except ImportError as e:
        raise ImportError("rac.otel needs OpenTelemetry: pip install "
                          f"'./packages/rac-core[otel]' ({e})") from e
    from rac import __version__

    tracer = trace.get_tracer(INSTRUMENTATION, __version__, tracer_provider=tracer_provider)
    plugin = TracingPlugin(tracer, values=values)
    engine.register_plugin(plugin, name="rac.otel")
    return plugin


__all__ = ["INSTRUMENTATION", "TracingPlugin", "enable_tracing"]
