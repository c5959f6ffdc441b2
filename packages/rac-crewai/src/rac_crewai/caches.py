"""CrewAI's tool cache (``Crew(cache=True)``, an agent's ``cache_handler``) and RAC's rollbacks.

CrewAI answers a repeated call of a tool with the same arguments from its ``CacheHandler``
without calling the tool. RAC keeps side-effecting tools out of it (their ``cache_function``
says no); a read-only tool keeps its own. But a read made before a rollback describes a world
the rollback changed: served afterwards from the cache, "FL-101 confirmed" would reach the agent
after RAC cancelled FL-101.

So the caches of the crews and agents a run covers are emptied when a rollback of the run
starts and again when it finishes, and a read-only call is added to the cache only if no
rollback of its run began while it ran (its answer may predate the rollback). The cache is
CrewAI's ``CacheHandler`` (crewai 1.15), emptied under its own write lock.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any

import rac

#: How many runs' caches are remembered (the newest; an open run's are never many).
MEMORY = 1024

_LOCK = threading.Lock()
#: The cache handlers of each run (by run id), each once.
_CACHES: OrderedDict[str, dict[int, Any]] = OrderedDict()


def caches_of(crew_or_agent: Any, members: list[Any]) -> list[Any]:
    """The cache handlers a kickoff of ``crew_or_agent`` may answer calls from: the crew's
    own and its agents' (``members``)."""
    found = [getattr(crew_or_agent, "_cache_handler", None),
             getattr(crew_or_agent, "cache_handler", None)]
    found += [getattr(a, "cache_handler", None) for a in members]
    return [c for c in found if c is not None and callable(getattr(c, "read", None))]


def cover(run: rac.Run, caches: list[Any]) -> None:
    """Empty ``caches`` whenever ``run`` is rolled back (while RAC remembers the run)."""
    if not caches:
        return
    with _LOCK:
        held = _CACHES.setdefault(run.run_id, {})
        _CACHES.move_to_end(run.run_id)
        for c in caches:
            held[id(c)] = c
        while len(_CACHES) > MEMORY:
            _CACHES.popitem(last=False)


def forget(run_id: str) -> None:
    """The run is over: its caches need no more emptying by RAC."""
    with _LOCK:
        _CACHES.pop(run_id, None)


def _empty(cache: Any) -> None:
    entries = getattr(cache, "_cache", None)
    lock = getattr(cache, "_lock", None)
    if not isinstance(entries, dict):
        return
    if lock is not None and callable(getattr(lock, "w_locked", None)):
        with lock.w_locked():
            entries.clear()
    else:
        entries.clear()


def empty_caches(run_id: str) -> None:
    """Empty every cache of the run (a rollback of it starts or finishes)."""
    with _LOCK:
        caches = list(_CACHES.get(run_id, {}).values())
    for cache in caches:
        _empty(cache)


_CALL = threading.local()


def note_read(cacheable: bool) -> None:
    """Right after a call in this thread: whether its answer may be cached (a read-only tool's
    own predicate said so, and no rollback of its run began while it ran)."""
    _CALL.cacheable = cacheable


def cacheable_now() -> bool:
    """Whether the call this thread just made may be cached (see :func:`note_read`)."""
    return bool(getattr(_CALL, "cacheable", False))
