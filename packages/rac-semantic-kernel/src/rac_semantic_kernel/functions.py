"""A kernel's functions as RAC sees them: their names, and RAC tools that invoke them.

RAC names a kernel function by Semantic Kernel's fully qualified name, ``plugin-function``
(what the model calls and what the log records), or with ``names="function"`` by the bare
function name (then two plugins may not share one). Declarations may say ``plugin-function``,
``plugin.function``, or the bare function name when exactly one plugin of the kernel has it;
:meth:`KernelFunctions.resolve` turns any of these into the logged name.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextvars import ContextVar
from typing import Any, Literal

from semantic_kernel import Kernel
from semantic_kernel.functions import KernelArguments, KernelFunction

import rac
from rac_semantic_kernel.values import plain_value

#: Plugins whose functions are an orchestration's control flow, never tool calls.
CONTROL_PLUGINS = frozenset({"Handoff"})

#: How RAC names kernel functions in its log: ``plugin-function`` or the bare function name.
Naming = Literal["plugin-function", "function"]
NAMINGS: tuple[Naming, ...] = ("plugin-function", "function")


def signature(kernel: Kernel) -> tuple[tuple[str, int, int], ...]:
    """What changes when plugins or functions are added to or removed from ``kernel``."""
    return tuple((name, id(p), len(p.functions)) for name, p in kernel.plugins.items())


def _schema(fn: KernelFunction) -> dict[str, Any]:
    props: dict[str, Any] = {}
    required: list[str] = []
    for p in fn.metadata.parameters:
        if not p.name:
            continue
        props[p.name] = dict(p.schema_data or {})
        if p.is_required:
            required.append(p.name)
    return {"type": "object", "properties": props, "required": required}


#: The fully qualified name of a function RAC itself invokes (a compensation, an alternative):
#: RAC's function filter lets that invocation through instead of logging it as a new call.
RAC_CALLING: ContextVar[str | None] = ContextVar("rac_semantic_kernel_calling", default=None)


def function_tool(kernel: Kernel, fn: KernelFunction, name: str) -> rac.Tool:
    """A RAC tool that invokes ``fn`` on ``kernel`` (its function filters run; the result is
    the function's value, SK content made plain)."""

    async def acall(args: dict[str, Any]) -> Any:
        marker = RAC_CALLING.set(fn.fully_qualified_name)
        try:
            result = await fn.invoke(kernel, KernelArguments(**args))
        finally:
            RAC_CALLING.reset(marker)
        return plain_value(result.value if result is not None else None)

    schema = _schema(fn)
    return rac.Tool(name, acall=acall, params=list(schema["properties"]),
                    required=list(schema["required"]), description=fn.description or "",
                    schema=schema)


class KernelFunctions:
    """The functions of one kernel, by the names RAC accepts for them."""

    def __init__(self, kernel: Kernel, naming: Naming = "plugin-function") -> None:
        self.kernel = kernel
        self.signature = signature(kernel)
        #: logged name -> function
        self.by_name: dict[str, KernelFunction] = {}
        #: SK's fully qualified name -> logged name
        self.logged: dict[str, str] = {}
        #: logged name -> the function's parameter names (read once: SK builds them per read)
        self.params: dict[str, tuple[str, ...]] = {}
        self._bare: dict[str, list[str]] = {}
        self._plugins: set[str] = set()
        for plugin in kernel.plugins.values():
            for fn in plugin.functions.values():
                if fn.plugin_name in CONTROL_PLUGINS:
                    continue
                full = fn.fully_qualified_name
                self._bare.setdefault(fn.name, []).append(full)
                if fn.plugin_name:
                    self._plugins.add(fn.plugin_name)
                name = full if naming == "plugin-function" else fn.name
                if name in self.by_name:
                    raise rac.ConfigurationError(
                        f"with names='function' two functions of this kernel are logged as "
                        f"{name!r}: {sorted(self._bare[fn.name])}; rename one, or keep the "
                        f"default names='plugin-function'")
                self.by_name[name] = fn
                self.logged[full] = name
                self.params[name] = tuple(p.name for p in fn.parameters if p.name)

    def __iter__(self) -> Iterator[str]:
        return iter(self.by_name)

    def resolve(self, name: str, *, strict: bool = False) -> str | None:
        """The logged name of the function ``name`` refers to, or None if it names none of
        this kernel's functions.

        Raises :class:`rac.ConfigurationError` when ``name`` is ambiguous (a bare name two
        plugins have, or a name that is both a bare function name and ``plugin-function``),
        and with ``strict`` when it names a plugin of this kernel and a function the plugin
        does not have (another kernel may have a plugin of that name with that function).
        """
        candidates: list[str] = []
        qualified = None
        for sep in ("-", "."):
            plugin, found, function = name.partition(sep)
            if found and plugin in self._plugins:
                qualified = f"{plugin}-{function}"
                if qualified in self.logged:
                    candidates.append(qualified)
                break
        for full in self._bare.get(name, []):
            if full not in candidates:
                candidates.append(full)
        if len(candidates) > 1:
            raise rac.ConfigurationError(
                f"{name!r} is ambiguous in this kernel: it may mean {sorted(candidates)}; write "
                f"the function as 'plugin-function'")
        if candidates:
            return self.logged[candidates[0]]
        if qualified is not None and strict:
            plugin = qualified.partition("-")[0]
            have = sorted(n.partition("-")[2] for n in self.logged if n.startswith(plugin + "-"))
            raise rac.ConfigurationError(
                f"{name!r}: plugin {plugin!r} of this kernel has no function "
                f"{qualified.partition('-')[2]!r} (it has {have})")
        return None

    def tools(self) -> list[rac.Tool]:
        """A RAC tool for each function (callable as compensators and alternatives)."""
        return [function_tool(self.kernel, fn, name) for name, fn in self.by_name.items()]
