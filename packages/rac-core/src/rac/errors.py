"""Exceptions raised by RAC and exceptions tools may raise to tell RAC how to treat a failure."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rac.report import RecoveryReport


class RACError(Exception):
    """Base class of every error RAC itself raises."""


class ConfigurationError(RACError, ValueError):
    """A compensation, alternative, retry policy or store was declared wrongly.

    Raised when the declaration is registered, never later when it is needed. The message names
    the tool and the field that is wrong.
    """


class StoreError(RACError):
    """The transaction log could not be opened, read or written."""


class ConflictError(StoreError):
    """A record with the same (run_id, seq) already exists: a duplicate write, never overwritten."""


class LeaseLostError(StoreError):
    """This process no longer holds the run it wrote to: its lease ran out and another process
    (a recoverer) claimed the run, so the write was refused and nothing of it reached the log."""


class SequenceMismatchError(RACError):
    """A resumed run asked for a different step than the log holds at that sequence number."""


class CallRefused(RACError):
    """RAC refused a tool call before it ran; the message says why (no compensator under
    ``no_compensation="refuse"``, an irreversible tool refused or not approved, a before-image
    that could not be read, a sibling of a model turn that was rolled back)."""


class NoCompensationError(CallRefused):
    """Raised before a side-effecting tool with no compensator runs, under ``no_compensation="refuse"``."""


class CompensationMappingError(RACError):
    """The arguments of a compensating call cannot be mapped unambiguously from the original call."""


class ToolCallFailed(RACError):
    """A tool call failed for good: retries and alternatives were exhausted and the scope was rolled back.

    ``report`` holds what happened; ``str(error)`` is the rendered report.
    """

    def __init__(self, report: RecoveryReport, rendered: str | None = None) -> None:
        self.report = report
        super().__init__(rendered if rendered is not None else report.render())


class TransientError(Exception):
    """Raise from a tool to say the failure is temporary and the call may be retried.

    ``retry_after`` (seconds), when given, is honoured as the least wait before the next attempt.
    """

    def __init__(self, message: str = "", *, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class AmbiguousError(Exception):
    """Raise from a tool to say the call may have taken effect and RAC cannot tell (the request
    was sent, the answer was lost). RAC retries it only when a repeat is safe (``idempotent``
    or ``keyed`` tools); otherwise it reconciles the call or holds it in doubt."""


class PermanentError(Exception):
    """Raise from a tool to say the call failed before it had any effect and will not go away
    by retrying the same call (no seats left, a card declined before it was charged).

    It is a declaration: RAC takes the call as one that did not happen. A tool that may have
    acted before it failed raises :class:`AmbiguousError` (or anything else: an exception of
    a type no rule knows is in doubt)."""


class ResultError(Exception):
    """A tool returned normally but its structured result says it failed (an ``error`` field, ...).

    RAC raises nothing of this kind to callers; it is how a failed result travels through
    classification, so that ``rac_classify_error`` sees results and exceptions alike.

    A tool may write and then answer an error, so an error result is not evidence that nothing
    happened: unless it says it may be retried (``transient``), it is *ambiguous*.
    ``ambiguous=False`` is a plugin's declaration that this result came before any effect
    (the call did not happen); ``ambiguous=True`` says it may have happened (a ``200`` whose
    body lost the id); None (the default) says nothing, and the call may have happened.
    Declaring ``errors_before_effect=(rac.ResultError,)`` for a tool says the same of every
    error result it gives.
    """

    def __init__(self, message: str, result: object, *, transient: bool = False,
                 retry_after: float | None = None, ambiguous: bool | None = None) -> None:
        super().__init__(message)
        self.result = result
        self.transient = transient
        #: True: the call may have taken effect all the same; False: a plugin says it came
        #: before any effect; None: nothing says, so it may have
        self.ambiguous = ambiguous
        self.retry_after = retry_after
