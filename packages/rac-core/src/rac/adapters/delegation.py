"""Delegating calls: a tool call whose work is other calls of the same run (an agent used as a
tool, a ``CodeActAgent``'s code execution, a manager handing work to a coworker).

Such a call changes nothing in the world itself; the calls made inside it do, and they join the
run (the run is current in the context they run in). Logged as an action of its own, it has no
compensator, and a rollback would report it "STILL LIVE" and leave the run needing attention
though everything it did was undone. So an adapter runs a delegating call unlogged, inside
:class:`Delegation`: when a call made inside it fails for good (the run is rolled back), what
the model inside heard is also what the delegating call answers, so the parent's model is told
what was undone whatever the delegate's model answers. :func:`rac.adapters.execute` and
:func:`rac.adapters.aexecute` note every such failure in each delegation open around them.
"""

from __future__ import annotations

from contextvars import ContextVar, Token
from types import TracebackType

from rac.adapters.control import failure_text
from rac.run import CallOutcome, Run
from rac.run.context import CURRENT_RUN, CURRENT_SCOPE

#: The delegations open in this context, innermost last (each collects failure texts).
_OPEN: ContextVar[tuple[list[str], ...]] = ContextVar("rac_open_delegations", default=())


class Delegation:
    """A delegating call under way in this context (``with``): :attr:`heard` collects what the
    calls made inside it that failed for good told their models (RAC's reports).

    With ``run``, that run is the current run inside the block (the agents the call invokes
    join it) without being opened or closed there: for a framework that calls its tools
    outside the block of the run they belong to (the run of a turn, kept by the adapter)."""

    def __init__(self, run: Run | None = None) -> None:
        #: The failure texts of the calls made inside, in order.
        self.heard: list[str] = []
        self._run = run
        self._token: Token[tuple[list[str], ...]] | None = None
        self._current: tuple[Token[Run | None], Token[tuple[Run, str] | None]] | None = None

    def __enter__(self) -> Delegation:
        self._token = _OPEN.set((*_OPEN.get(), self.heard))
        if self._run is not None and CURRENT_RUN.get() is not self._run:
            self._current = (CURRENT_RUN.set(self._run),
                             CURRENT_SCOPE.set((self._run, "0")))
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if self._current is not None:
            run_token, scope_token = self._current
            CURRENT_SCOPE.reset(scope_token)
            CURRENT_RUN.reset(run_token)
            self._current = None
        if self._token is not None:
            _OPEN.reset(self._token)
            self._token = None

    def answer(self, text: str) -> str:
        """``text`` (what the delegate answered) followed by what RAC reported to it, so the
        parent's model hears what was undone; ``text`` alone when nothing failed or ``text``
        carries it already."""
        unheard = [h for h in dict.fromkeys(self.heard) if h not in text]  # once, in order
        if not unheard:
            return text
        told = "\n\n".join(unheard)
        return f"{text}\n\n{told}" if text else told


def note(outcome: CallOutcome) -> None:
    """Note ``outcome`` in every delegation open in this context, if it failed."""
    if outcome.ok:
        return
    open_now = _OPEN.get()
    if open_now:
        text = failure_text(outcome)
        for heard in open_now:
            heard.append(text)


__all__ = ["Delegation", "note"]
