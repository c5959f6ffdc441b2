"""Which run a function call belongs to when no run is open around the invocation.

Semantic Kernel tells a filter nothing about the invocation a call is part of, but every call
of one auto-function-calling completion shares its chat history, and the completion answers
the history's last user message. A ``ChatCompletionAgent`` builds a new history for each
``get_response``/``invoke``/``invoke_stream``. So the calls of one agent invocation (or one
completion on a user's own history) share a run: the run of (history, last user message). A
new user message on the same history starts a new run.

The run is marked completed after each call (``Run.finish``, which leaves a busy run running);
it stays joinable, so a later failure in the same invocation still undoes all of it. The runs
are kept in a :class:`rac.adapters.RunRegistry`; a run is forgotten when its history dies (an
agent's history dies with its invocation), so an object id is never reused as a key.

A history saved during an invocation and restored in another process (``ChatHistory.serialize``
/ ``restore_chat_history``, a ``ChatHistoryAgentThread`` built on it, resumed with
``get_response(thread=...)``) goes on with the run its saved calls were part of: each function
result of a run carries the run's id in its metadata (:data:`rac.adapters.resumed.RUN_ID_KEY`),
and the first call on a restored history whose latest user turn holds such a result continues
that run (see :func:`rac.adapters.resumed.continue_run`): the crashed process's calls are undone
with the resumed ones, never left live behind an all-clear. A run marked completed after its
last call is continued too when the saved turn was cut short (it ends with a function call or
result, not the model's answer).
"""

from __future__ import annotations

import weakref
from collections.abc import Hashable
from typing import Any

from semantic_kernel.contents import ChatHistory, FunctionCallContent, FunctionResultContent
from semantic_kernel.contents.utils.author_role import AuthorRole

import rac
from rac.adapters import RunRegistry, registry_of
from rac.adapters.resumed import RUN_ID_KEY, continue_run


def _anchor(history: ChatHistory) -> Any:
    """The last user message of ``history`` (None if it has none)."""
    for message in reversed(history.messages):
        if message.role == AuthorRole.USER:
            return message
    return None


def saved_run_id(history: ChatHistory) -> tuple[str | None, bool]:
    """The RAC run id carried by the latest function result of ``history``'s latest user turn
    (a history saved during an invocation and restored), or None; and whether that turn was
    cut short: before the request being answered now (the last message), the turn ends with a
    function call or result rather than the model's answer."""
    found: str | None = None
    cut_short = False
    for i in range(len(history.messages) - 1, -1, -1):
        message = history.messages[i]
        if message.role == AuthorRole.USER:
            break
        if i == len(history.messages) - 2:  # the message before the current request
            cut_short = message.role == AuthorRole.TOOL or any(
                isinstance(item, FunctionCallContent) for item in message.items)
        for item in message.items:
            if isinstance(item, FunctionResultContent):
                run_id = (item.metadata or {}).get(RUN_ID_KEY)
                if isinstance(run_id, str):
                    found = run_id
                    break
        if found is not None:
            break
    return found, cut_short and found is not None


class HeldElsewhere(rac.RACError):
    """A restored history's run is carried on by another live process: its calls here would
    be a second process working on one run."""


class InvocationRuns:
    """The runs of the invocations one engine serves, keyed by their chat history."""

    def __init__(self, engine: rac.RAC) -> None:
        self.engine = engine
        self.registry: RunRegistry[Hashable] = RunRegistry(engine)
        # id(history) -> weak reference whose callback reports the history's death; the
        # callback only appends (the collector may run it anywhere, even inside this table's
        # methods), and dead keys are forgotten on the next lookup.
        self._watched: dict[int, weakref.ref[ChatHistory]] = {}
        self._keys: dict[int, set[Hashable]] = {}  # id(history) -> its registry keys
        self._dead: list[int] = []

    def run_for(self, history: ChatHistory, agent_id: str | None) -> rac.Run:
        """The run of the invocation ``history`` belongs to, opened on first use."""
        if self._dead:
            self._forget_dead()
        key = id(history)
        if key not in self._watched:
            dead = self._dead

            def died(_: object, k: int = key) -> None:
                dead.append(k)

            self._watched[key] = weakref.ref(history, died)
        run_key = (key, id(_anchor(history)))
        self._keys.setdefault(key, set()).add(run_key)
        return self.registry.run_for(run_key, opener=lambda: self._open(history, agent_id))

    def _open(self, history: ChatHistory, agent_id: str | None) -> rac.Run:
        """The run of a history's first call: the run a restored history's saved calls were
        part of, continued; else a new one."""
        run_id, cut_short = saved_run_id(history)
        try:  # a run this adapter completed after a call goes on when the turn was cut short
            resumed = continue_run(self.engine, run_id, completed=cut_short) \
                if run_id is not None else None
        except rac.RACError as e:
            if type(e) is not rac.RACError:  # not reopen's refusal: something else failed
                raise
            raise HeldElsewhere(str(e)) from e
        return resumed if resumed is not None else self.engine.run(agent_id=agent_id)

    def _forget_dead(self) -> None:
        dead, self._dead[:] = list(self._dead), []
        for key in dead:
            ref = self._watched.get(key)
            if ref is not None and ref() is None:
                del self._watched[key]
                for run_key in self._keys.pop(key, ()):
                    self.registry.forget(run_key)

    def __len__(self) -> int:
        return len(self.registry)


def runs_of(engine: rac.RAC) -> InvocationRuns:
    """The invocation runs of ``engine`` (one table per engine, shared by its kernels)."""
    return registry_of(engine, "rac_semantic_kernel.runs", InvocationRuns)
