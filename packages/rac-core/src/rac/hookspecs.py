"""Every hook RAC calls, in one module: the contract for plugins and adapters.

Implement a hook by decorating a function or method with :data:`rac.hookimpl` and passing the
object to ``rac.RAC(plugins=[...])`` (or publishing it in the ``rac`` entry point group). Hooks
marked *first result* stop at the first implementation that returns something other than
``None``; RAC's built-in behaviour is registered as default plugins (see
:mod:`rac.plugins`) that run last, so any plugin can replace a piece of it. Notification hooks
are called on every implementation and their return values are ignored; an exception raised in a
notification hook propagates to the caller, so keep them small.

Arguments are passed by keyword; an implementation may accept any subset of them.
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
    from rac.tools import Tool

#: The project name under which hooks are specified and implemented.
PROJECT = "rac"
hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)


# -- decisions (first result) --------------------------------------------------------------------
@hookspec(firstresult=True)
def rac_resolve_compensation(engine: RAC, record: Record) -> Compensation | None:
    """Find how to undo a completed action.

    Called once per completed, side-effecting action when a rollback reaches it.
    ``record`` is the action's log record (tool, args, result). Return a
    :class:`rac.Compensation` or None when this plugin does not know; when every plugin returns
    None the action is reported as not undoable. The default plugin looks the tool up in the
    engine's registry (code declarations and MCP metadata).
    """


@hookspec(firstresult=True)
def rac_map_compensation_args(
        engine: RAC, record: Record, compensation: Compensation, tool: Tool | None,
        args: dict[str, Any], result: Any, idempotency_key: str) -> dict[str, Any] | None:
    """Build the arguments of the compensating call.

    Called just before a compensation runs. ``tool`` is the compensating tool (None if RAC cannot
    find it); ``args`` and ``result`` are the original call's arguments and normalised result
    (the live values in the process that made the call, the logged ones after a crash);
    ``idempotency_key`` is the compensation's own key. Return the argument dict, or raise
    :class:`rac.CompensationMappingError` naming the parameter that cannot be mapped; the record
    then goes to ``compensation_failed`` with that message. The default plugin applies the
    declared callable or paths, else matches the compensator's parameter names.
    """


@hookspec(firstresult=True)
def rac_classify_error(tool: str, error: BaseException) -> Classification | None:
    """Say whether a failure is transient (retry) or permanent.

    Called for every failed attempt, including results flagged by
    :func:`rac_detect_result_error` (as a :class:`rac.errors.ResultError`). Return a
    :class:`rac.classify.Classification` or None to defer.
    """


@hookspec(firstresult=True)
def rac_detect_result_error(tool: str, result: Any) -> BaseException | None:
    """Decide whether a returned result is a failure.

    Called after every attempt that returned normally, with the normalised result. Return an
    exception describing the failure (usually :class:`rac.errors.ResultError`) or None if the
    result is a success. The default plugin reads structured fields only (``error``, ``status``,
    ``success``/``ok``), never free text.
    """


@hookspec(firstresult=True)
def rac_normalize_result(tool: str, result: Any) -> Any:
    """Turn a framework's tool output into the plain value RAC logs, maps and inspects.

    Called after every attempt that returned normally. Adapters implement it to unwrap their
    framework's message types (a LangChain ``ToolMessage``, a LlamaIndex ``ToolOutput``). Return
    the plain value, or None to defer (the default plugin returns the value unchanged).
    """


@hookspec(firstresult=True)
def rac_approve_compensation(
        engine: RAC, record: Record, compensation: Compensation, args: dict[str, Any]) -> bool | None:
    """Approve a compensation before it runs, or hold it for a person.

    Return True to run it, False to hold it (the action stays live, the run ends
    ``needs_attention`` and ``rac resume`` can run it later), None to defer. The default approves.
    """


@hookspec(firstresult=True)
def rac_render_report(report: RecoveryReport) -> str | None:
    """Render the recovery report the agent receives after an unrecoverable failure.

    Return the text, or None to defer to the default short rendering.
    """


@hookspec(firstresult=True)
def rac_adapt_tool(tool: Any) -> Tool | None:
    """Turn a framework's tool object into a :class:`rac.Tool` the engine can call.

    Called when tools are registered (``rac.RAC(tools=...)``, ``engine.register_tools``,
    ``run.add_tools``) with an object that is not already a ``rac.Tool``. Adapters implement it
    for their framework's tool type; return None for objects you do not know (plain functions
    are handled by RAC itself).
    """


# -- notifications -----------------------------------------------------------------------------
@hookspec
def rac_record_written(record: Record, previous: str | None) -> None:
    """A log record was appended (``previous`` is None) or changed status (``previous`` is the
    old status). Called after the store write succeeded."""


@hookspec
def rac_run_status_changed(run_id: str, status: RunStatus, previous: RunStatus | None) -> None:
    """A run was created (``previous`` None) or changed status."""


@hookspec
def rac_rollback_started(run_id: str, scope: str, seqs: list[int], reason: str) -> None:
    """A rollback began; ``seqs`` are the actions it will compensate, in order."""


@hookspec
def rac_rollback_finished(run_id: str, scope: str, report: RecoveryReport) -> None:
    """A rollback ended; ``report`` says what was undone and what is left."""
