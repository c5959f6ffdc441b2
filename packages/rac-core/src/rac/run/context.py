"""Which run and scope are open in the current context (thread or asyncio task), and nested
scopes."""

from __future__ import annotations

from contextvars import ContextVar, Token
from types import TracebackType
from typing import TYPE_CHECKING

from rac.errors import ToolCallFailed

if TYPE_CHECKING:
    from rac.run.run import Run

CURRENT_RUN: ContextVar[Run | None] = ContextVar("rac_current_run", default=None)
CURRENT_SCOPE: ContextVar[tuple[Run, str] | None] = ContextVar("rac_current_scope", default=None)


def current_run() -> Run | None:
    """The run open in this context (thread or task), if any."""
    return CURRENT_RUN.get()


def current_scope_of(run: Run) -> str:
    """The id of the innermost scope of ``run`` open in this context (``"0"``: the run)."""
    cur = CURRENT_SCOPE.get()
    return cur[1] if cur is not None and cur[0] is run else "0"


class Scope:
    """A nested transaction scope of a run (see :meth:`rac.Run.scope`): a failure inside it
    rolls back only what it did. Leaving it with an exception rolls it back."""

    def __init__(self, run: Run, scope_id: str) -> None:
        self.run = run
        self.scope_id = scope_id
        self._token: Token[tuple[Run, str] | None] | None = None

    def __enter__(self) -> Scope:
        self._token = CURRENT_SCOPE.set((self.run, self.scope_id))
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        try:
            if exc is not None and not isinstance(exc, ToolCallFailed):
                self.run.rollback(reason=f"scope aborted by {type(exc).__name__}",
                                  scope=self.scope_id)
        finally:
            if self._token is not None:
                CURRENT_SCOPE.reset(self._token)

    async def __aenter__(self) -> Scope:
        return self.__enter__()

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        try:
            if exc is not None and not isinstance(exc, ToolCallFailed):
                await self.run.arollback(reason=f"scope aborted by {type(exc).__name__}",
                                         scope=self.scope_id)
        finally:
            if self._token is not None:
                CURRENT_SCOPE.reset(self._token)
