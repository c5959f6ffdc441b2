"""Tools as RAC calls them: a name, a sync and/or async callable taking keyword arguments, and
the names of its parameters (used to map compensation arguments)."""

from __future__ import annotations

import asyncio
import functools
import inspect
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rac.engine import RAC

SyncCall = Callable[[dict[str, Any]], Any]
AsyncCall = Callable[[dict[str, Any]], Awaitable[Any]]


@dataclass
class Tool:
    """A tool RAC can call by name.

    ``call`` and ``acall`` take the arguments as one dict. Give at least one; the other is derived
    (an async-only tool called synchronously runs on a private event loop; a sync-only tool
    called asynchronously runs in a worker thread). ``params`` lists the parameter names (None if
    unknown) and ``required`` those without a default. ``params`` may also be given as the
    tool's JSON schema (an object schema with ``properties``): the names and the required ones
    are read from it, and it is kept as ``schema``. ``schema`` is what RAC shows a model that
    proposes compensations and what it validates mappings against; None when unknown.
    """

    name: str
    call: SyncCall | None = None
    acall: AsyncCall | None = None
    params: list[str] | None = None
    required: list[str] = field(default_factory=list)
    description: str = ""
    schema: dict[str, Any] | None = None

    #: True if the tool has an ``idempotency_key`` parameter (RAC then passes the step's key,
    #: unless the caller did). Worked out from ``params`` when the tool is made.
    takes_key: bool = field(init=False, repr=False, compare=False, default=False)

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise ValueError(f"a tool needs a non-empty string name, got {self.name!r}")
        if self.call is None and self.acall is None:
            raise ValueError(f"tool {self.name!r} needs a call or an acall")
        if isinstance(self.params, Mapping):
            self.params, required, self.schema = _from_schema(self.name, self.params)
            self.required = list(self.required) or required
        elif self.params is not None:
            if isinstance(self.params, str) or not all(isinstance(p, str) for p in self.params):
                raise ValueError(f"tool {self.name!r}: params must be a list of parameter names "
                                 f"or a JSON schema with 'properties', got {self.params!r}")
            self.params = list(self.params)
        if self.schema is None and self.params is not None:
            self.schema = {"type": "object",
                           "properties": {p: {} for p in self.params},
                           "required": list(self.required)}
        self.takes_key = self.params is not None and "idempotency_key" in self.params

    def invoke(self, args: dict[str, Any]) -> Any:
        """Call the tool synchronously."""
        if self.call is not None:
            return self.call(args)
        assert self.acall is not None
        return _run_coroutine(self.acall(args))

    async def ainvoke(self, args: dict[str, Any]) -> Any:
        """Call the tool without blocking the event loop."""
        if self.acall is not None:
            return await self.acall(args)
        assert self.call is not None
        return await asyncio.to_thread(self.call, args)

    @classmethod
    def from_function(cls, fn: Callable[..., Any], name: str | None = None) -> Tool:
        """A tool from a plain function or coroutine function; its parameters come from its
        signature."""
        tool_name = name or getattr(fn, "__name__", None)
        if not tool_name:
            raise ValueError(f"cannot name the tool {fn!r}: pass name=")
        params, required = signature_params(fn)
        doc = inspect.getdoc(fn) or ""
        # A TypeError raised here, in the frame that calls fn, may say that Python could not
        # bind the arguments: fn never ran (rac.classify.mark_unbound checks it).
        if inspect.iscoroutinefunction(fn):
            async def acall(args: dict[str, Any]) -> Any:
                try:
                    return await fn(**args)
                except TypeError as e:
                    _unbound(e, fn, args)
                    raise
            return cls(tool_name, acall=acall, params=params, required=required, description=doc)

        def call(args: dict[str, Any]) -> Any:
            try:
                return fn(**args)
            except TypeError as e:
                _unbound(e, fn, args)
                raise
        return cls(tool_name, call=call, params=params, required=required, description=doc)


def _unbound(error: TypeError, fn: Callable[..., Any], args: dict[str, Any]) -> None:
    from rac.classify import mark_unbound

    mark_unbound(error, fn, args)



class ToolSet:
    """A fixed set of tools, prepared once and offered to many runs.

    An adapter that opens a run per agent turn offers the agent's tools to each of them (so
    compensators and alternatives can be called). Build the set once with
    :meth:`rac.RAC.tool_set`; :meth:`rac.Run.add_tools` then costs one dict update instead of
    adapting the tools and checking the engine's declarations against them again. The check
    is remembered per set and made again after the declarations change. Iterating a set
    gives its tools, so it is accepted wherever a list of tools is.
    """

    __slots__ = ("engine", "by_name", "checked_at")

    def __init__(self, tools: Sequence[Tool], *, engine: RAC) -> None:
        by_name: dict[str, Tool] = {}
        for t in tools:
            if not isinstance(t, Tool):
                raise TypeError(f"a ToolSet holds rac.Tool objects, got {type(t).__name__}: "
                                f"{t!r}; build it with RAC.tool_set(), which adapts them")
            by_name[t.name] = t
        #: the engine whose declarations the set is checked against
        self.engine = engine
        #: name -> tool (read only: a set never changes once built)
        self.by_name: Mapping[str, Tool] = MappingProxyType(by_name)
        #: the registry version the set last passed its check at (-1: not checked yet)
        self.checked_at = -1

    def __iter__(self) -> Iterator[Tool]:
        return iter(self.by_name.values())

    def __len__(self) -> int:
        return len(self.by_name)

    def __repr__(self) -> str:
        return f"ToolSet({sorted(self.by_name)})"


def _from_schema(name: str, schema: Mapping[str, Any]
                 ) -> tuple[list[str], list[str], dict[str, Any]]:
    """Parameter names, required names and the schema itself, from a JSON object schema."""
    props = schema.get("properties")
    if not isinstance(props, Mapping) or not all(isinstance(k, str) for k in props):
        raise ValueError(f"tool {name!r}: params given as a mapping must be a JSON object schema "
                         f"with a 'properties' mapping, got keys {sorted(map(str, schema))}")
    required = schema.get("required") or []
    if not isinstance(required, list | tuple) or not all(r in props for r in required):
        raise ValueError(f"tool {name!r}: the schema's 'required' must list some of its "
                         f"properties {sorted(props)}, got {required!r}")
    return list(props), [str(r) for r in required], dict(schema)


def signature_params(fn: Callable[..., Any]) -> tuple[list[str] | None, list[str]]:
    """The keyword parameter names of ``fn`` and those without a default; (None, []) when the
    signature cannot be read or takes ``**kwargs``."""
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return None, []
    params: list[str] = []
    required: list[str] = []
    for p in sig.parameters.values():
        if p.kind is p.VAR_KEYWORD:
            return None, []
        if p.kind in (p.VAR_POSITIONAL, p.POSITIONAL_ONLY):
            continue
        params.append(p.name)
        if p.default is p.empty:
            required.append(p.name)
    return params, required


def as_tool(obj: Tool | Callable[..., Any], name: str | None = None) -> Tool:
    """Coerce a :class:`Tool` or a plain function to a :class:`Tool`."""
    if isinstance(obj, Tool):
        return obj
    if callable(obj):
        return Tool.from_function(obj, name=name)
    raise TypeError(f"expected a rac.Tool or a function, got {type(obj).__name__}: {obj!r}")


def tools_by_name(tools: Sequence[Tool | Callable[..., Any]] | None) -> dict[str, Tool]:
    """A name -> Tool table; a duplicate name is an error."""
    out: dict[str, Tool] = {}
    for t in tools or ():
        tool = as_tool(t)
        if tool.name in out and out[tool.name] is not tool:
            raise ValueError(f"two different tools are named {tool.name!r}")
        out[tool.name] = tool
    return out


def _run_coroutine(coro: Awaitable[Any]) -> Any:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(_await(coro))
    # Called synchronously from inside a running loop: run in a private loop on a thread.
    import concurrent.futures

    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(functools.partial(asyncio.run, _await(coro))).result()


async def _await(aw: Awaitable[Any]) -> Any:
    return await aw
