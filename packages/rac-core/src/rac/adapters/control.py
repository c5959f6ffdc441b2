"""Framework control flow that passes through RAC untouched, and the text of a failure."""

from __future__ import annotations

from typing import Any

from rac.engine import RAC
from rac.report import for_model
from rac.run import CallOutcome


class CallRefused(Exception):  # noqa: N818 - control flow, like a framework's interrupt
    """The framework refused the model's call before the tool ran (its arguments failed
    validation, say): no failure to recover from.

    Raise it from an ``invoke`` with the framework's own answer as ``reply``, after declaring it
    with :func:`declare_control_flow` (:func:`rac.adapters.engine_for` does when it is listed
    in ``passthrough``): RAC logs the call as not run, retries nothing, rolls nothing back, and
    the exception leaves ``run.execute``; the adapter catches it and gives ``reply`` to the
    model. Subclass it to name a framework's refusal.
    """

    def __init__(self, reply: Any, text: str | None = None) -> None:
        super().__init__(text if text is not None else str(reply))
        #: what the framework answers the model instead of a tool result
        self.reply = reply


def declare_control_flow(engine: RAC, *exc_types: type[BaseException]) -> None:
    """Declare ``exc_types`` (interrupts, hand-offs, refusals) control flow of a framework:
    raised by a tool, they are never retried, never a failure, never a reason to roll back,
    and they leave ``run.execute`` as they were raised. :class:`CallRefused` is always
    declared with them."""
    engine.add_passthrough(CallRefused, *exc_types)


def failure_text(outcome: CallOutcome) -> str:
    """What the model is told about a call RAC could not complete: the rendered report (or
    why the call was refused, without file-system paths or advice to the developer: see
    :func:`rac.report.for_model`), never an empty string."""
    if outcome.report is not None and outcome.message:
        return outcome.message  # rendered for the model already (rac_render_report)
    return for_model(outcome.message or f"RAC: {outcome.tool} did not complete.")
