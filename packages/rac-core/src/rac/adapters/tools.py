"""Framework tools as :class:`rac.Tool` s the engine can call itself (compensators, alternatives
the model was not offered), converted once and cached in bounded caches."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Generic, TypeVar

from rac.adapters.params import json_schema_of, params_from_schema
from rac.engine import RAC
from rac.tools import AsyncCall, SyncCall, Tool, ToolSet

T = TypeVar("T")


def framework_tool(name: str, *, call: SyncCall | None = None, acall: AsyncCall | None = None,
                   schema: Any = None, description: str = "") -> Tool:
    """A :class:`rac.Tool` that calls a framework tool directly: ``call(args)`` /
    ``acall(args)`` run it the way the framework would (with its validation), and ``schema``
    (a JSON schema or a pydantic model, see :func:`params_from_schema`) gives the parameter
    names RAC maps compensation arguments to. The JSON schema itself is kept as the tool's
    ``schema`` (argument types and descriptions): what RAC shows a model proposing a
    compensation and checks a proposed mapping's values against, as the framework would check
    the call."""
    params, required = params_from_schema(schema)
    return Tool(name, call=call, acall=acall, params=params, required=required,
                schema=json_schema_of(schema), description=description or "")


class ToolCache(Generic[T]):
    """Conversions of framework tool objects, by identity, least recently used out past
    ``limit`` (the cache holds each object while it keeps its conversion, so an id is never
    reused for another object meanwhile). Thread-safe."""

    def __init__(self, convert: Callable[[Any], T], limit: int = 1024) -> None:
        if limit < 1:
            raise ValueError(f"a tool cache needs a limit of at least 1, got {limit}")
        self.convert = convert
        self.limit = limit
        self._lock = threading.Lock()
        self._items: OrderedDict[int, tuple[Any, T]] = OrderedDict()

    def __len__(self) -> int:
        return len(self._items)

    def __call__(self, obj: Any) -> T:
        """The conversion of ``obj`` (made on first use)."""
        key = id(obj)
        with self._lock:
            hit = self._items.get(key)
            if hit is not None and hit[0] is obj:
                self._items.move_to_end(key)
                return hit[1]
        converted = self.convert(obj)
        with self._lock:
            self._items[key] = (obj, converted)
            self._items.move_to_end(key)
            while len(self._items) > self.limit:
                self._items.popitem(last=False)
        return converted


class ToolSetCache:
    """The :class:`rac.ToolSet` of each list of framework tools an adapter sees (one per
    agent, usually), so offering an agent's tools to the run of each turn costs a lookup.
    Keyed by the identities of the tools, least recently used out past ``limit``."""

    def __init__(self, engine: RAC, convert: Callable[[Any], Tool | None],
                 limit: int = 256) -> None:
        if limit < 1:
            raise ValueError(f"a tool set cache needs a limit of at least 1, got {limit}")
        self.engine = engine
        self.convert = convert
        self.limit = limit
        self._lock = threading.Lock()
        self._sets: OrderedDict[tuple[int, ...], tuple[ToolSet, list[Any]]] = OrderedDict()

    def __len__(self) -> int:
        return len(self._sets)

    def tool_set(self, tools: Sequence[Any]) -> ToolSet:
        """The tool set of ``tools`` (each converted with ``convert``; None leaves one out)."""
        key = tuple(map(id, tools))
        with self._lock:
            hit = self._sets.get(key)
            if hit is not None:
                self._sets.move_to_end(key)
                return hit[0]
        converted = [t for t in map(self.convert, tools) if t is not None]
        made = self.engine.tool_set(converted)
        with self._lock:
            self._sets[key] = (made, list(tools))  # the tools are kept: the ids stay theirs
            while len(self._sets) > self.limit:
                self._sets.popitem(last=False)
        return made

    def offer(self, run: Any, tools: Iterable[Any] | None, *,
              agent_id: str | None = None) -> None:
        """Make ``tools`` callable by ``run`` (for compensations and alternatives), as the
        tools of ``agent_id``: the agent id the calls are recorded with. Without it, two
        agents of one run with tools of the same name share one of them, and a call of one is
        undone through the other's tool (see :meth:`rac.Run.add_tools`)."""
        if tools:
            run.add_tools(self.tool_set(list(tools)), agent_id=agent_id)
