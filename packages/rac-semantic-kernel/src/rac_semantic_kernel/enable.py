"""Turning RAC on for a Semantic Kernel kernel (or an agent's kernel) in one call."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, TypeVar

from semantic_kernel import Kernel
from semantic_kernel.filters import FilterTypes

from rac import RAC, ConfigurationError
from rac_semantic_kernel.declarations import adopt_declarations
from rac_semantic_kernel.engine_setup import engine_for
from rac_semantic_kernel.filters import FunctionCallFilter
from rac_semantic_kernel.functions import NAMINGS, KernelFunctions, Naming

T = TypeVar("T")


def _filter_of(kernel: Kernel) -> FunctionCallFilter | None:
    """The RAC filter pair already registered on ``kernel``, if any."""
    for _, f in kernel.auto_function_invocation_filters:
        owner = getattr(f, "__self__", None)
        if isinstance(owner, FunctionCallFilter):
            return owner
    return None


def _drop_filters(kernel: Kernel, pair: FunctionCallFilter) -> None:
    """Take ``pair``'s two filters off ``kernel`` (a clone that inherited them)."""
    for attr in ("auto_function_invocation_filters", "function_invocation_filters"):
        kept = [(fid, f) for fid, f in getattr(kernel, attr)
                if getattr(f, "__self__", None) is not pair]
        getattr(kernel, attr)[:] = kept


def enabled_engine(target: Any) -> RAC | None:
    """The engine RAC was enabled with on a kernel (or an agent's kernel), if any."""
    kernel = getattr(target, "kernel", target)
    found = _filter_of(kernel) if isinstance(kernel, Kernel) else None
    return found.engine if found is not None else None


def enable_rac(target: T, rac: RAC | None = None, *, agent_id: str | None = None,
               names: Naming = "plugin-function", trusted_mcp: Iterable[str] = (),
               delegates: Iterable[str] = (), **config: Any) -> T:
    """Run every function call the model makes through ``target`` under RAC; returns ``target``.

    ``target`` is a ``semantic_kernel.Kernel``, or an agent with one (``ChatCompletionAgent``):
    RAC registers its filters on that kernel (auto function invocation and function
    invocation). ``rac`` is a shared :class:`rac.RAC` engine; or give the engine's keywords
    (``compensations=...``, ``alternatives=...``, ``store=...``) instead, not both.

    Compensations and alternatives name kernel functions as ``plugin-function`` (SK's fully
    qualified name, which the log records); ``plugin.function`` and a bare function name that
    only one plugin has are accepted too. A compensator is any function of the kernel (it need
    not be offered to the model) or a tool the engine knows.

    Args:
        agent_id: written on the records of this kernel's calls (default: the agent's name
            for an agent, else the run's agent id).
        names: ``"plugin-function"`` (default) logs ``travel-book_flight``; ``"function"``
            logs the bare ``book_flight`` (for declarations shared with other frameworks; two
            plugins of the kernel may then not share a function name).
        trusted_mcp: names of the kernel's MCP plugins whose servers are trusted: their
            read-only and idempotency hints are believed (see ``rac.mcp``).
        delegates: functions that hand work to another agent (a kernel function awaiting
            another enabled agent's ``get_response``), as ``plugin-function``,
            ``plugin.function`` or the bare name. Such a call is not logged as a side effect
            of its own: the other agent's calls join this run, and when one fails for good
            the function's result carries RAC's report, so this agent's model hears what was
            undone. An agent added to the kernel as a plugin (``kernel.add_plugin(agent)``,
            SK's agent-as-function) is a delegation without being named.

    A plugin added after ``enable_rac`` is taken in at its first call. If a declaration
    concerning it names a compensator or alternative RAC cannot reach, that function's calls
    are refused (never run, the model told why, an error event logged) while the kernel's
    other calls go on; ``kernel.invoke`` of it raises :class:`rac.ConfigurationError`.

    A call made by an agent of an orchestration whose runtime (``InProcessRuntime``) was
    started outside any run of the engine is refused, the model told why: its tasks cannot
    see the run opened later, and the call could not be undone with the rest of the work.
    Start the runtime inside ``async with engine.run()``.

    One agent invocation (or one auto-function-calling completion) is one run; inside
    ``async with engine.run()`` calls join that run instead. Enabling again with the same
    engine is harmless; with another engine, or another agent id or naming, it is an error.

    Raises :class:`rac.ConfigurationError` naming what is wrong: a target that is neither a
    kernel nor an agent with one, both ``rac`` and keywords, a compensation or alternative
    naming a function the kernel does not have and the engine does not know, an ambiguous name.
    """
    kernel = getattr(target, "kernel", target)
    if not isinstance(kernel, Kernel):
        raise ConfigurationError(
            f"enable_rac needs a semantic_kernel.Kernel or an agent with a kernel "
            f"(ChatCompletionAgent), got {type(target).__name__}")
    if names not in NAMINGS:
        raise ConfigurationError(f"names must be one of {NAMINGS}, got {names!r}")
    if agent_id is None and kernel is not target:
        name = getattr(target, "name", None)
        agent_id = name if isinstance(name, str) and name else None
    engine = engine_for(rac, config)
    existing = _filter_of(kernel)
    if existing is not None and not existing.enabled_on(kernel):
        # kernel.clone() of an enabled kernel carries its filter pair (SK deep-copies filter
        # lists; the pair copies as itself): enabling the clone gives it a pair of its own, so
        # its calls are this agent's
        _drop_filters(kernel, existing)
        existing = None
    if existing is not None:
        if existing.engine is not engine:
            raise ConfigurationError(
                "this kernel already has RAC enabled with another engine; share one engine "
                "(rac=...) or give each agent its own kernel (kernel.clone())")
        if agent_id is not None and existing.agent_id not in (None, agent_id):
            raise ConfigurationError(
                f"this kernel is already enabled for agent {existing.agent_id!r}, not "
                f"{agent_id!r}: give each agent its own kernel (kernel.clone()) so RAC can "
                f"tell their calls apart")
        if existing.naming != names:
            raise ConfigurationError(f"this kernel is already enabled with "
                                     f"names={existing.naming!r}, not {names!r}")
        existing.agent_id = existing.agent_id or agent_id
        existing.trusted_mcp = existing.trusted_mcp | frozenset(trusted_mcp)
        existing.delegates = existing.delegates | frozenset(delegates)
        existing.prepare(kernel)
        return target
    filters = FunctionCallFilter(engine, agent_id, names, trusted_mcp, delegates)
    filters.prepare(kernel)  # declarations checked now, before anything runs
    filters.mark_enabled(kernel)
    kernel.add_filter(FilterTypes.AUTO_FUNCTION_INVOCATION, filters.auto)
    kernel.add_filter(FilterTypes.FUNCTION_INVOCATION, filters.function)
    return target


def prepare_recovery(engine: RAC, kernel: Kernel, *, agent_id: str | None = None,
                     names: Naming = "plugin-function") -> RAC:
    """Make ``kernel``'s functions callable by ``engine`` without a model (returns ``engine``):
    what a start-up ``engine.recover()`` needs to undo the runs of a process that died, whose
    records name functions as the log does (``travel-book_flight``). The engine's declarations
    are adopted under those names, as ``enable_rac`` does. ``agent_id``: the functions are that
    agent's (two agents' plugins may share a name: give each agent's kernel with its id)."""
    if names not in NAMINGS:
        raise ConfigurationError(f"names must be one of {NAMINGS}, got {names!r}")
    functions = KernelFunctions(kernel, names)
    adopt_declarations(engine, functions)
    engine.register_tools(functions.tools(), agent_id=agent_id)
    return engine
