"""Runs: one transaction scope of an agent, and the logic of a call under RAC.

A :class:`Run` writes an intent record before each tool call and its outcome after, retries
what is safe to retry, reconciles calls that may have happened, tries declared alternatives,
and when a call fails for good rolls back the current scope: every side effect that happened or
may have, newest first, dependents before what they depend on. Scopes nest
(:meth:`Run.scope`); a failure rolls back only the innermost one.

Modules: :mod:`~rac.run.run` (the run, the facade), :mod:`~rac.run.state` (its bookkeeping,
its one owner: events in, the next status out, no I/O), :mod:`~rac.run.calls` (a call's
life), :mod:`~rac.run.attempts` (reading one attempt), :mod:`~rac.run.reconcile` (lookups and
before-images), :mod:`~rac.run.planning` (what a rollback undoes, a pure function),
:mod:`~rac.run.rollback` (undoing a scope and its report), :mod:`~rac.run.compensation`
(undoing one action), :mod:`~rac.run.log` (writes to the log), :mod:`~rac.run.values` (stored
and exact copies), :mod:`~rac.run.keys` (ids and idempotency keys), :mod:`~rac.run.context`
(the current run and nested scopes), :mod:`~rac.run.outcome` (what a call's caller gets).
"""

from rac.run.context import Scope, current_run
from rac.run.keys import idempotency_key
from rac.run.outcome import CallOutcome
from rac.run.reconcile import Reconciled
from rac.run.run import AsyncInvoker, Invoker, Run

__all__ = ["AsyncInvoker", "CallOutcome", "Invoker", "Reconciled", "Run", "Scope",
           "current_run", "idempotency_key"]
