"""RAC (Robust Agent Compensation): a deterministic safety net under AI agents.

RAC logs every tool call before and after it runs, retries transient failures, tries declared
alternatives, and when a call fails for good compensates every completed side effect of the
run, newest first, then tells the agent what happened so it can replan from a clean state.

Start with :class:`rac.RAC`. Names are loaded on first use, so ``import rac`` stays cheap.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

_EXPORTS: dict[str, str] = {
    "RAC": "rac.engine",
    "CallOutcome": "rac.run", "Run": "rac.run", "Scope": "rac.run", "current_run": "rac.run",
    "Classification": "rac.classify", "ErrorKind": "rac.classify",
    "Clock": "rac.clock", "SystemClock": "rac.clock",
    "Compensation": "rac.registry", "Lookup": "rac.registry", "BeforeImage": "rac.registry",
    "Effect": "rac.registry", "Irreversible": "rac.registry",
    "AmbiguousError": "rac.errors", "CallRefused": "rac.errors",
    "UndoneAction": "rac.report", "AttemptedAlternative": "rac.report",
    "LifecycleError": "rac.lifecycle",
    "CompensationMappingError": "rac.errors", "ConfigurationError": "rac.errors",
    "ConflictError": "rac.errors", "LeaseLostError": "rac.errors",
    "NoCompensationError": "rac.errors",
    "PermanentError": "rac.errors", "RACError": "rac.errors", "ResultError": "rac.errors",
    "SequenceMismatchError": "rac.errors", "StoreError": "rac.errors",
    "ToolCallFailed": "rac.errors", "TransientError": "rac.errors",
    "hookimpl": "rac.hookspecs", "hookspec": "rac.hookspecs",
    "Record": "rac.models", "RecordKind": "rac.models", "RecordStatus": "rac.models",
    "RunInfo": "rac.models", "RunStatus": "rac.models",
    "RecoveryReport": "rac.report",
    "RetryPolicy": "rac.retry",
    "MemoryStore": "rac.stores", "SQLiteStore": "rac.stores", "Store": "rac.stores",
    "open_store": "rac.stores",
    "Tool": "rac.tools", "ToolSet": "rac.tools",
}

__all__ = [
    "AmbiguousError",
    "AttemptedAlternative",
    "BeforeImage",
    "CallOutcome",
    "CallRefused",
    "Effect",
    "Irreversible",
    "LeaseLostError",
    "LifecycleError",
    "Lookup",
    "UndoneAction",
    "Classification",
    "Clock",
    "Compensation",
    "CompensationMappingError",
    "ConfigurationError",
    "ConflictError",
    "ErrorKind",
    "MemoryStore",
    "NoCompensationError",
    "PermanentError",
    "RAC",
    "RACError",
    "Record",
    "RecordKind",
    "RecordStatus",
    "RecoveryReport",
    "ResultError",
    "RetryPolicy",
    "Run",
    "RunInfo",
    "RunStatus",
    "SQLiteStore",
    "Scope",
    "SequenceMismatchError",
    "Store",
    "StoreError",
    "SystemClock",
    "Tool",
    "ToolCallFailed",
    "ToolSet",
    "TransientError",
    "current_run",
    "hookimpl",
    "hookspec",
    "open_store",
]

if TYPE_CHECKING:
    from rac.classify import Classification, ErrorKind
    from rac.clock import Clock, SystemClock
    from rac.engine import RAC
    from rac.errors import (
        AmbiguousError,
        CallRefused,
        CompensationMappingError,
        ConfigurationError,
        ConflictError,
        LeaseLostError,
        NoCompensationError,
        PermanentError,
        RACError,
        ResultError,
        SequenceMismatchError,
        StoreError,
        ToolCallFailed,
        TransientError,
    )
    from rac.hookspecs import hookimpl, hookspec
    from rac.lifecycle import LifecycleError
    from rac.models import Record, RecordKind, RecordStatus, RunInfo, RunStatus
    from rac.registry import BeforeImage, Compensation, Effect, Irreversible, Lookup
    from rac.report import AttemptedAlternative, RecoveryReport, UndoneAction
    from rac.retry import RetryPolicy
    from rac.run import CallOutcome, Run, Scope, current_run
    from rac.stores import MemoryStore, SQLiteStore, Store, open_store
    from rac.tools import Tool, ToolSet


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'rac' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_EXPORTS])
