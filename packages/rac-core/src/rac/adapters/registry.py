"""Runs an adapter opened, keyed by what the adapter says one run is (a turn, a thread, a
kickoff): found again by later calls, bounded, never evicting a run that is busy."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

from rac.engine import RAC
from rac.run import Run

K = TypeVar("K", bound=Hashable)
R = TypeVar("R")

_REGISTRIES_LOCK = threading.Lock()


class RunRegistry(Generic[K]):
    """The runs of one engine that an adapter opened, by key.

    For frameworks that show an adapter steps, not a block to wrap a run in (a LangGraph tool
    node, a kernel filter): each call finds its run by a key it computes from the framework's
    data (the thread and the message that started the turn, say). Thread-safe: parallel calls
    with one key get one run.

    Bounded: past ``limit`` keys the least recently used run is finished (see
    :meth:`rac.Run.finish`) and forgotten, unless a call of it is under way (``run.busy``):
    that run goes on, so it moves to the newest end and the registry holds a few more than
    ``limit`` meanwhile. A forgotten run is never rolled back by later failures.
    """

    def __init__(self, engine: RAC, limit: int = 512) -> None:
        if limit < 1:
            raise ValueError(f"a run registry needs a limit of at least 1, got {limit}")
        #: the engine whose runs these are
        self.engine = engine
        #: how many keys are kept before the least recently used idle one is let go
        self.limit = limit
        self._lock = threading.Lock()
        self._runs: OrderedDict[K, Run] = OrderedDict()

    def __len__(self) -> int:
        return len(self._runs)

    def __contains__(self, key: object) -> bool:
        return key in self._runs

    def get(self, key: K) -> Run | None:
        """The run kept for ``key``, or None."""
        return self._runs.get(key)

    def run_for(self, key: K, *, agent_id: str | None = None, run_id: str | None = None,
                opener: Callable[[], Run] | None = None) -> Run:
        """The run of ``key``: the one kept, else a new one (``opener()``, or
        ``engine.run(agent_id=..., run_id=...)``), kept from now on."""
        runs = self._runs
        lock = self._lock
        lock.acquire()  # not `with`: this is on every tool call
        try:
            run = runs.get(key)
            if run is not None:
                runs.move_to_end(key)
                return run
            run = opener() if opener is not None else self.engine.run(agent_id=agent_id,
                                                                      run_id=run_id)
            runs[key] = run
            evicted = self._evict() if len(runs) > self.limit else None
        finally:
            lock.release()
        if evicted is not None:
            evicted.finish()  # its own event, if its status changes
        return run

    def put(self, key: K, run: Run) -> None:
        """Keep ``run`` for ``key`` (a run the adapter found elsewhere, e.g. in the log)."""
        with self._lock:
            self._runs[key] = run
            self._runs.move_to_end(key)
            evicted = self._evict() if len(self._runs) > self.limit else None
        if evicted is not None:
            evicted.finish()

    def _evict(self) -> Run | None:
        """The least recently used idle run, taken out (under the lock); None if every run
        but the newest is busy."""
        runs = self._runs
        for _ in range(len(runs) - 1):
            key, oldest = next(iter(runs.items()))
            if not oldest.busy:
                del runs[key]
                return oldest
            runs.move_to_end(key)
        return None

    def finish(self, key: K) -> bool:
        """Mark the run of ``key`` completed if it is idle (it stays kept and joinable);
        False if there is none or it stays running."""
        run = self._runs.get(key)
        return run.finish() if run is not None else False

    def forget(self, key: K) -> Run | None:
        """Stop keeping the run of ``key`` (nothing is finished); the run, or None."""
        with self._lock:
            return self._runs.pop(key, None)

    def close(self) -> None:
        """Finish and forget every run kept here."""
        with self._lock:
            runs = list(self._runs.values())
            self._runs.clear()
        for run in runs:
            run.finish()


def registry_of(engine: RAC, name: str, factory: Callable[[RAC], R]) -> R:
    """The adapter state kept on ``engine`` under ``name`` (in ``engine.extensions``), made
    by ``factory(engine)`` on first use: it lives and dies with the engine, and every adapter
    object of that framework on the engine shares it."""
    with _REGISTRIES_LOCK:
        found = engine.extensions.get(name)
        if found is None:
            found = engine.extensions[name] = factory(engine)
        return found
