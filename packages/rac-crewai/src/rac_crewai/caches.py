"""CrewAI's tool cache (``Crew(cache=True)``, an agent's ``cache_handler``) and RAC's rollbacks.

CrewAI answers a repeated call of a tool with the same arguments from its ``CacheHandler``
without calling the tool. RAC keeps side-effecting tools out of it (their ``cache_function``
says no); a read-only tool keeps its own. But a read made before a rollback describes a world
the rollback changed: served afterwards from the cache, "FL-101 confirmed" would reach the agent
after RAC cancelled FL-101.

So the caches of the crews and agents a run covers are emptied when a rollback of the run
starts and again when it finishes, and a read-only call is added to the cache only if no
rollback of its run began while it ran (its answer may predate the rollback).

CrewAI reads its cache for every call, whatever the tool's ``cache_function`` (that only
decides what is added). An answer of a side-effecting tool already in a cache when a run
begins (left by a kickoff before ``enable_rac``, or put there by hand) would stand in for the
call: the model told "FL-900 booked", nothing booked, nothing in the log. So when a kickoff
opens or joins a run, every entry of its caches but those of the engine's read-only tools is
dropped. RAC's own calls (retries, compensations, lookups, before-images) call the tools
directly: they never read the cache, and never add to it.

The cache is CrewAI's ``CacheHandler`` (crewai 1.15), changed under its own write lock.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from crewai.utilities.string_utils import sanitize_tool_name

import rac
from rac.events import emit

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
    """Empty ``caches`` whenever ``run`` is rolled back (while RAC remembers the run), and drop
    from them now every answer of a tool that is not read-only (:func:`drop_side_effects`)."""
    if not caches:
        return
    read_only = set(run.engine.registry.read_only)
    read_only |= {sanitize_tool_name(n) for n in read_only}
    for c in caches:
        drop_side_effects(c, read_only, run.run_id)
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


@contextmanager
def _entries(cache: Any) -> Iterator[dict[str, Any] | None]:
    """The entries of a ``CacheHandler`` (None if it is not one), under its write lock."""
    entries = getattr(cache, "_cache", None)
    lock = getattr(cache, "_lock", None)
    if not isinstance(entries, dict):
        yield None
    elif lock is not None and callable(getattr(lock, "w_locked", None)):
        with lock.w_locked():
            yield entries
    else:
        yield entries


def _tool_of(key: str) -> str:
    """The tool name of a ``CacheHandler`` key (``f"{tool}-{input}"``, the input empty or a
    JSON object)."""
    if key.endswith("-"):
        return key[:-1]
    cut = key.find("-{")
    return key[:cut] if cut >= 0 else key


def drop_side_effects(cache: Any, read_only: set[str], run_id: str) -> None:
    """Drop from ``cache`` every answer of a tool not in ``read_only`` (one event if any)."""
    with _entries(cache) as entries:
        if not entries:
            return
        dropped = [k for k in entries if _tool_of(k) not in read_only]
        for k in dropped:
            del entries[k]
    if dropped:
        emit("rac_crewai.cache.dropped", run_id=run_id, status="dropped",
             tools=sorted({_tool_of(k) for k in dropped}), entries=len(dropped),
             reason="answers of tools that are not read-only would stand in for their calls")


def _empty(cache: Any) -> None:
    with _entries(cache) as entries:
        if entries is not None:
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
