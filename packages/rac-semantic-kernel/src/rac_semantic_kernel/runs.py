"""Which run a function call belongs to when no run is open around the invocation.

Semantic Kernel tells a filter nothing about the invocation a call is part of, but every call
of one auto-function-calling completion shares its chat history, and the completion answers
the history's last user message. A ``ChatCompletionAgent`` builds a new history for each
``get_response``/``invoke``/``invoke_stream``. So the calls of one agent invocation (or one
completion on a user's own history) share a run: the run of (history, last user message). A
new user message on the same history starts a new run.

The run is marked completed after each call (``Run.finish``, which leaves a busy run running);
it stays joinable, so a later failure in the same invocation still undoes all of it.
"""

from __future__ import annotations

import threading
import weakref
from collections import OrderedDict
from typing import Any

from semantic_kernel.contents import ChatHistory
from semantic_kernel.contents.utils.author_role import AuthorRole

import rac

#: How many invocations' runs are remembered (a busy run is never forgotten).
MAX_RUNS = 512


def _anchor(history: ChatHistory) -> Any:
    """The last user message of ``history`` (None if it has none)."""
    for message in reversed(history.messages):
        if message.role == AuthorRole.USER:
            return message
    return None


class _Entry:
    __slots__ = ("history", "anchor", "run")

    def __init__(self, history: ChatHistory, anchor: Any, run: rac.Run,
                 on_death: Any) -> None:
        self.history = weakref.ref(history, on_death)
        self.anchor = anchor
        self.run = run


class InvocationRuns:
    """The runs of the invocations one engine serves, keyed by their chat history."""

    def __init__(self, engine: rac.RAC) -> None:
        self.engine = engine
        self._runs: OrderedDict[int, _Entry] = OrderedDict()
        self._lock = threading.Lock()
        # Weak references of histories that died (an agent's history dies with its
        # invocation): their entries are dropped on the next lookup. The callback only
        # appends, as the collector may run it anywhere, even inside this table's methods.
        self._dead: list[weakref.ref[ChatHistory]] = []

    def run_for(self, history: ChatHistory, agent_id: str | None) -> rac.Run:
        """The run of the invocation ``history`` belongs to, opened on first use."""
        anchor = _anchor(history)
        key = id(history)
        with self._lock:
            if self._dead:
                self._drop_dead()
            entry = self._runs.get(key)
            if entry is not None and entry.history() is history and entry.anchor is anchor:
                self._runs.move_to_end(key)
                return entry.run
            run = self.engine.run(agent_id=agent_id)
            self._runs[key] = _Entry(history, anchor, run, self._dead.append)
            self._runs.move_to_end(key)
            if len(self._runs) > MAX_RUNS:
                self._forget_oldest()
            return run

    def _drop_dead(self) -> None:
        dead, self._dead[:] = list(self._dead), []
        gone = {id(ref) for ref in dead}
        for key in [k for k, e in self._runs.items() if id(e.history) in gone]:
            del self._runs[key]

    def _forget_oldest(self) -> None:
        """Forget the least recently used runs that are not busy, down to ``MAX_RUNS``."""
        excess = len(self._runs) - MAX_RUNS
        idle = []
        for key, entry in self._runs.items():  # oldest first
            if not entry.run.busy:
                idle.append(key)
                if len(idle) == excess:
                    break
        for key in idle:
            del self._runs[key]

    def __len__(self) -> int:
        return len(self._runs)


def runs_of(engine: rac.RAC) -> InvocationRuns:
    """The invocation runs of ``engine`` (one table per engine, shared by its kernels)."""
    table = engine.extensions.get("rac_semantic_kernel.runs")
    if not isinstance(table, InvocationRuns):
        table = InvocationRuns(engine)
        engine.extensions["rac_semantic_kernel.runs"] = table
    return table
