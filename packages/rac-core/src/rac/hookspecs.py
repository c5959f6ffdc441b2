"""Every hook RAC calls, in one module: the contract for plugins and adapters.

Implement a hook by decorating a function or method with :data:`rac.hookimpl` and passing the
object to ``rac.RAC(plugins=[...])`` (or publishing it in the ``rac`` entry point group).
Arguments are passed by keyword; an implementation may accept any subset of them, in any order
(``def rac_normalize_result(self, result)`` is fine).

*First-result* hooks stop at the first implementation that returns something other than
``None``; RAC's built-in behaviour is registered as default plugins (see :mod:`rac.plugins`)
marked ``trylast``, so any plugin can replace a piece of it. *Notification* hooks are called on
every implementation and their return values are ignored.

A plugin that raises never breaks a call or a rollback (see :mod:`rac.dispatch`): the failure
is emitted as a ``rac.plugin_failed`` warning naming the plugin and the hook, and for a
first-result hook the implementation counts as having no answer, so the next one (in the end
the default) answers. Each hook below says what that means for it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pluggy

if TYPE_CHECKING:
    from rac.classify import Classification
    from rac.engine import RAC
    from rac.models import Record, RunStatus
    from rac.registry import Compensation
    from rac.report import RecoveryReport
    from rac.run import Run
    from rac.tools import Tool

#: The project name under which hooks are specified and implemented.
PROJECT = "rac"
hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)


# -- decisions about calls (first result) --------------------------------------------------------
@hookspec(firstresult=True)
def rac_normalize_result(tool: str, result: Any) -> Any:
    """Turn a framework's tool output into the plain value RAC logs, maps and inspects.

    :param tool: the name of the tool that returned ``result``.
    :param result: what the tool returned (a LangChain ``ToolMessage``, a LlamaIndex
        ``ToolOutput``, a JSON string, ...).
    :return: the plain value, or None to defer. There is no default implementation: with no
        answer, the value is ``result`` itself.

    First result. Called after every attempt of a call, compensation, lookup or before-image
    read that returned normally. A plugin that raises: no answer.
    """


@hookspec(firstresult=True)
def rac_detect_result_error(tool: str, result: Any) -> BaseException | None:
    """Decide whether a returned result is a failure.

    :param tool: the tool that returned it.
    :param result: the normalised result (see :func:`rac_normalize_result`).
    :return: an exception describing the failure (usually :class:`rac.errors.ResultError`),
        or None if the result is a success (or this plugin does not know). The default plugin
        reads structured fields only (``error``, ``status``, ``success``/``ok``), never free text.

    First result. Called after every attempt that returned normally, once per attempt. A
    plugin that raises: no answer (the default still reads the result).
    """


@hookspec(firstresult=True)
def rac_classify_error(tool: str, error: BaseException) -> Classification | None:
    """Say whether a failure may go away by retrying, and whether the call may have happened.

    :param tool: the tool whose attempt failed.
    :param error: the exception it raised, or the :class:`rac.errors.ResultError` for a
        result flagged by :func:`rac_detect_result_error`.
    :return: a :class:`rac.Classification` (``transient``: before any effect, retried;
        ``permanent``: before any effect, not retried; ``ambiguous``: it may have taken
        effect), or None to defer. A plugin's ``transient``/``permanent`` is a declaration
        that nothing happened: RAC believes it. The default plugin reads exception types,
        status codes and ``Retry-After`` (:func:`rac.classify.default_classify`), and calls
        an error no rule knows ambiguous. The tool's ``errors_before_effect`` declaration
        overrides an ambiguous answer.

    First result. Called once per failed attempt, of calls and of compensations. A plugin
    that raises: no answer.
    """


@hookspec(firstresult=True)
def rac_approve_action(engine: RAC, run: Run, tool: str, args: dict[str, Any]) -> bool | None:
    """Approve an irreversible call before it runs (tools declared
    ``irreversible={tool: "approve"}``).

    :param engine: the engine.
    :param run: the run making the call.
    :param tool: the tool about to be called.
    :param args: its arguments.
    :return: True to run it, False to refuse it (denied), None when nobody has decided: the
        call is refused as waiting for approval, and the agent is told so. A plugin may
        instead raise its framework's human-in-the-loop exception (LangGraph's ``interrupt()``)
        if it is declared a pass-through (``engine.add_passthrough``): it leaves the call
        untouched, with nothing written. There is no default implementation.

    First result. Called once per call of such a tool, before its intent is written. A plugin
    that raises: no answer (the call is refused as waiting for approval). In an async run it is
    called on a worker thread, never on the event loop, so it may wait for a person.
    """


# -- decisions about undoing (first result) ------------------------------------------------------
@hookspec(firstresult=True)
def rac_resolve_compensation(engine: RAC, record: Record) -> Compensation | None:
    """Find how to undo an action.

    :param engine: the engine.
    :param record: the action's log record (tool, args, result). When it is called before the
        action runs (to apply the ``no_compensation`` policy and find a before-image), its
        ``seq`` is 0 and its result None.
    :return: a :class:`rac.Compensation`, or None when this plugin does not know; with no
        answer at all the action is not undoable. The default plugin looks the tool up in the
        engine's registry (code declarations and MCP metadata).

    First result. Called once before each side-effecting call, and once per action a rollback
    reaches. A plugin that raises: no answer.
    """


@hookspec(firstresult=True)
def rac_map_compensation_args(
        engine: RAC, record: Record, compensation: Compensation, tool: Tool | None,
        args: dict[str, Any], result: Any, idempotency_key: str,
        before: Any) -> dict[str, Any] | None:
    """Build the arguments of the compensating call.

    :param engine: the engine.
    :param record: the action being undone.
    :param compensation: how to undo it (from :func:`rac_resolve_compensation`).
    :param tool: the compensating tool.
    :param args: the original call's arguments, exactly as the call had them (never
        redacted or truncated: the live values in the process that made the call, the log's
        undo data after a crash). For a call that may have happened, its idempotency key is
        among them as ``idempotency_key``.
    :param result: the original call's normalised result (None for a call in doubt).
    :param idempotency_key: the compensation's own key.
    :param before: the before-image read right before the action, or None.
    :return: the argument dict, or None to defer. Raise :class:`rac.CompensationMappingError`
        naming the parameter that cannot be mapped. The default plugin applies the declared
        callable or paths, else matches the compensator's parameter names, and never maps a
        required parameter to None.

    First result. Called once per compensation, just before its intent is written. A plugin
    that raises :class:`rac.CompensationMappingError` makes the record a dead letter with that
    message; any other exception: no answer.
    """


@hookspec(firstresult=True)
def rac_approve_compensation(
        engine: RAC, record: Record, compensation: Compensation, args: dict[str, Any]) -> bool | None:
    """Approve a compensation before it runs, or hold it for a person.

    :param engine: the engine.
    :param record: the action being undone.
    :param compensation: how it is undone.
    :param args: the compensating call's arguments.
    :return: True to run it, False to hold it (the action stays live and is named, the run
        ends ``needs_attention`` and ``rac resume`` can run it later), None to defer. The
        default approves.

    First result. Called once per compensation, after its arguments are mapped. A plugin that
    raises holds the compensation (fail closed: never taken for "no answer", which the default
    would approve); the report and the record's note name the error. In an async run it is
    called on a worker thread, never on the event loop.
    """


@hookspec(firstresult=True)
def rac_inject_fault(record: Record, args: dict[str, Any], phase: str,
                     result: Any) -> BaseException | None:
    """Make one attempt of a tool call or a compensation fail on purpose (fault injection:
    ``rac.testing.prove`` and chaos tests use it; production engines have no implementation).

    :param record: a copy of the record the attempt belongs to: an ``action`` (a tool call the
        agent made) or a ``compensation``; ``record.attempts`` is the attempt's number.
    :param args: the arguments the tool is called with (do not change them).
    :param phase: ``"before"``, asked before the tool is called, or ``"after"``, asked once it
        returned (its effect happened).
    :param result: None before; the tool's raw result after.
    :return: an exception to end the attempt with (``"before"``: the tool is not called, as if
        the request never left; ``"after"``: the result is dropped, as if the answer was lost
        after the tool committed), or None to let the attempt be.

    First result. Called twice per attempt of every action and compensation, only while some
    plugin implements it (an engine without one pays nothing). A plugin may also end the
    process here (a crash after the effect). A plugin that raises: no answer.
    """


@hookspec(firstresult=True)
def rac_render_report(report: RecoveryReport) -> str | None:
    """Render the recovery report the agent receives after an unrecoverable failure.

    :param report: what the rollback did and what is left.
    :return: the text, or None to defer to the default short rendering
        (:func:`rac.report.render_report`). A renderer must keep the report's honesty: never
        say the world is back unless ``report.clean``.

    First result. Called once per rollback that an agent is told about. A plugin that
    raises: no answer.
    """


@hookspec(firstresult=True)
def rac_adapt_tool(tool: Any) -> Tool | None:
    """Turn a framework's tool object into a :class:`rac.Tool` the engine can call.

    :param tool: an object that is not already a ``rac.Tool``.
    :return: the ``rac.Tool``, or None for objects this plugin does not know (plain functions
        are handled by RAC itself).

    First result. Called when tools are registered (``rac.RAC(tools=...)``,
    ``engine.register_tools``, ``run.add_tools``), once per tool object (the engine caches the
    answer). A plugin that raises: no answer.
    """


# -- notifications -----------------------------------------------------------------------------
@hookspec
def rac_record_written(record: Record, previous: str | None) -> None:
    """A log record was written.

    :param record: a copy of the record as it is now.
    :param previous: None for a new record, else the status it had.

    Called after every store write that adds a record or changes its status, on every
    implementation. A listener that raises is reported, not propagated.
    """


@hookspec
def rac_attempt_started(record: Record) -> None:
    """An attempt of a tool call or a compensation is about to call the tool.

    :param record: a copy of the action or compensation record the attempt belongs to;
        ``record.attempts`` is the attempt's number (1 for the first).

    Called once per attempt (retries included), on every implementation, only while some
    plugin implements it (tracing: ``rac.otel``). A listener that raises is reported, not
    propagated.
    """


@hookspec
def rac_attempt_finished(record: Record, error: BaseException | None) -> None:
    """An attempt of a tool call or a compensation ended.

    :param record: a copy of its record (``attempts`` is the attempt's number).
    :param error: None when the attempt succeeded, else the failure (the exception the tool
        raised, or the error its result reported).

    Called once per attempt, after it was read, on every implementation, only while some
    plugin implements it. A listener that raises is reported, not propagated.
    """


@hookspec
def rac_run_status_changed(run_id: str, status: RunStatus, previous: RunStatus | None) -> None:
    """A run was created (``previous`` None) or changed status.

    :param run_id: the run.
    :param status: its new status.
    :param previous: its old status, or None when it was just created.

    Called after the store write, on every implementation. A listener that raises is
    reported, not propagated.
    """


@hookspec
def rac_rollback_started(run_id: str, scope: str, seqs: list[int], reason: str) -> None:
    """A rollback began.

    :param run_id: the run.
    :param scope: the scope being rolled back (``"0"`` is the whole run).
    :param seqs: the actions it will try to undo, in order.
    :param reason: why it was started.

    Called once per rollback, on every implementation. A listener that raises is reported,
    not propagated.
    """


@hookspec
def rac_rollback_finished(run_id: str, scope: str, report: RecoveryReport) -> None:
    """A rollback ended.

    :param run_id: the run.
    :param scope: the scope rolled back.
    :param report: what was undone and what is left.

    Called once per rollback, on every implementation. A listener that raises is reported,
    not propagated.
    """
