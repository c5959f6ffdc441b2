"""The RAC engine: declarations, the log, plugins, and the runs that use them."""

from __future__ import annotations

import functools
import inspect
import os
import socket
import uuid
import weakref
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, Literal, TypeVar, cast

import pluggy

from rac import hookspecs
from rac.clock import Clock, SystemClock
from rac.dispatch import Hooks
from rac.errors import ConfigurationError
from rac.leases import DEFAULT_LEASE_SECONDS, Leases
from rac.plugins import DEFAULT_PLUGINS
from rac.registry import (
    CompensationRegistry,
    CompensationSpec,
    Effect,
    Irreversible,
    Lookup,
)
from rac.report import RecoveryReport, render_report
from rac.retry import RetryPolicy
from rac.run import Run, current_run
from rac.run.plan import CallPlan
from rac.serialize import DEFAULT_MAX_CHARS
from rac.stores import Store, open_store
from rac.tools import Tool, ToolSet, as_tool, tools_by_name

F = TypeVar("F", bound=Callable[..., Any])
NoCompensationPolicy = Literal["warn", "assume_read_only", "refuse"]
_POLICIES = ("warn", "assume_read_only", "refuse")


class _PluginManager(pluggy.PluginManager):
    """A plugin manager that tells the engine when plugins come and go (to refresh its
    :class:`rac.dispatch.Hooks`)."""

    def __init__(self, project: str, on_change: Callable[[], None]) -> None:
        super().__init__(project)
        self._on_change = on_change

    def register(self, plugin: Any, name: str | None = None) -> str | None:
        result = super().register(plugin, name)
        self._on_change()
        return result

    def unregister(self, plugin: Any = None, name: str | None = None) -> Any:
        result = super().unregister(plugin, name)
        self._on_change()
        return result

    def add_hookspecs(self, module_or_class: Any) -> None:
        super().add_hookspecs(module_or_class)
        self._on_change()


class RAC:
    """The engine: what to undo and how, where the log lives, and which plugins run.

    One engine can serve many agents and many runs; share it to share one log. Every declaration
    is validated here, when it is made: an unknown tool (when ``tools`` is given), a malformed
    argument mapping or a pair that refers to itself raises :class:`rac.ConfigurationError`
    naming the tool and the field.

    Args:
        compensations: tool name -> compensating tool name, :class:`rac.Compensation`, or a
            mapping with ``tool``/``args``/``retry``.
        alternatives: tool name -> tools to try in order when it fails for good.
        retry: how tool calls are retried while their errors are transient.
        compensation_retry: how compensating calls are retried (default: 5 attempts).
        store: a store object or URL (``memory://``, ``sqlite:///path``,
            ``postgresql://...``); default ``$RAC_STORE`` or ``sqlite:///.rac/rac.db``.
        plugins: objects with ``@rac.hookimpl`` methods, registered after the defaults.
        tools: tools the engine may call itself (compensators, alternatives).
        read_only: tools with no side effects; never compensated.
        no_compensation: what to do with a side-effecting tool that has no compensator:
            ``"warn"`` (run it, log a warning, report it as not undoable), ``"assume_read_only"``,
            or ``"refuse"`` (refuse the call before it runs).
        clock: time source for backoff (inject :class:`rac.testing.VirtualClock` in tests).
        agent_id: default agent id of runs.
        load_entrypoints: also load plugins published in the ``rac`` entry point group.
        max_value_chars: size above which a logged argument or result is shown truncated with
            its hash (the exact value an undo needs is kept apart, see ``Record.undo``).
        effects: tool name -> its effect class (:class:`rac.Effect`: ``"read_only"``,
            ``"idempotent"``, ``"keyed"``, ``"unsafe"``); undeclared side-effecting tools are
            ``keyed`` when they take ``key_param``, else ``unsafe``.
        key_param: the parameter through which a ``keyed`` tool takes RAC's per-step
            idempotency key (default ``"idempotency_key"``).
        irreversible: tools that have no undo (a list, or tool name -> :class:`rac.Irreversible`
            policy ``"run"``/``"refuse"``/``"approve"``).
        lookups: tool name -> :class:`rac.Lookup` that reconciles its calls (also declared as
            ``Compensation(lookup=...)``).
        produces: tool name -> the result fields whose values it produces (narrows dependency
            inference; ``[]`` turns it off for the tool).
        errors_before_effect: exception types that tools raise only before any effect, so
            that such a failure is taken as a call that did not happen (RAC needs evidence to
            say so; see :mod:`rac.classify`): a tuple for every tool, or tool name -> tuple
            (``"*"`` for every tool). ``rac.ResultError`` says it of the tools' error results.
        lease_seconds: how long a live run's lease lasts without renewal; once it has run out
            (its process stopped renewing it), ``rac recover`` on any machine may claim the run
            (default 60; see :mod:`rac.leases`).
        heartbeat_seconds: how often the engine renews the leases of its live runs (default:
            a third of ``lease_seconds``; ``0``: only writes renew them).
    """

    def __init__(self, *, compensations: Mapping[str, CompensationSpec] | None = None,
                 alternatives: Mapping[str, Iterable[str]] | None = None,
                 retry: RetryPolicy | None = None, compensation_retry: RetryPolicy | None = None,
                 store: Store | str | Path | None = None, plugins: Iterable[object] = (),
                 tools: Iterable[Tool | Callable[..., Any]] | None = None,
                 read_only: Iterable[str] = (),
                 no_compensation: NoCompensationPolicy = "warn",
                 clock: Clock | None = None, agent_id: str = "agent",
                 load_entrypoints: bool = True,
                 max_value_chars: int = DEFAULT_MAX_CHARS,
                 effects: Mapping[str, Effect | str] | None = None,
                 key_param: str = "idempotency_key",
                 irreversible: Iterable[str] | Mapping[str, Irreversible | str] | None = None,
                 lookups: Mapping[str, Lookup | Mapping[str, Any]] | None = None,
                 produces: Mapping[str, Iterable[str]] | None = None,
                 errors_before_effect: Iterable[type[BaseException]]
                 | Mapping[str, Iterable[type[BaseException]]] | None = None,
                 lease_seconds: float = DEFAULT_LEASE_SECONDS,
                 heartbeat_seconds: float | None = None) -> None:
        if no_compensation not in _POLICIES:
            raise ConfigurationError(f"no_compensation must be one of {_POLICIES}, "
                                     f"got {no_compensation!r}")
        for name, value in (("retry", retry), ("compensation_retry", compensation_retry)):
            if value is not None and not isinstance(value, RetryPolicy):
                raise ConfigurationError(f"{name} must be a rac.RetryPolicy, got "
                                         f"{type(value).__name__}")
        if compensations is not None and not isinstance(compensations, Mapping):
            raise ConfigurationError("compensations must be a mapping of tool name -> "
                                     f"compensation, got {type(compensations).__name__}")
        if alternatives is not None and not isinstance(alternatives, Mapping):
            raise ConfigurationError("alternatives must be a mapping of tool name -> list of "
                                     f"tools, got {type(alternatives).__name__}")
        if not isinstance(key_param, str) or not key_param:
            raise ConfigurationError(f"key_param must be a parameter name, got {key_param!r}")
        if not isinstance(lease_seconds, (int, float)) or not lease_seconds > 0:
            raise ConfigurationError(f"lease_seconds must be a number of seconds above 0, got "
                                     f"{lease_seconds!r}")
        if heartbeat_seconds is not None and (
                not isinstance(heartbeat_seconds, (int, float)) or heartbeat_seconds < 0
                or heartbeat_seconds >= lease_seconds):
            raise ConfigurationError(
                f"heartbeat_seconds must be 0 (off) or a number of seconds below lease_seconds "
                f"({lease_seconds}), got {heartbeat_seconds!r}")
        self.registry = CompensationRegistry(compensations, alternatives, read_only)
        self.registry.key_param = key_param
        for tool, effect in (effects or {}).items():
            self.registry.set_effect(tool, effect)
        if irreversible is not None:
            policies = irreversible.items() if isinstance(irreversible, Mapping) \
                else ((t, Irreversible.RUN) for t in irreversible)
            for tool, policy in policies:
                self.registry.set_irreversible(tool, policy)
        for tool, lookup in (lookups or {}).items():
            self.registry.add_lookup(tool, lookup)
        for tool, fields in (produces or {}).items():
            self.registry.set_produces(tool, fields)
        if errors_before_effect is not None:
            if isinstance(errors_before_effect, Mapping):
                for tool, types in errors_before_effect.items():
                    self.registry.declare_errors_before_effect(
                        None if tool == "*" else tool, types)
            else:
                self.registry.declare_errors_before_effect(None, errors_before_effect)
        #: The parameter through which keyed tools take RAC's idempotency key.
        self.key_param = key_param
        #: Whether the plainest blocking calls take the shortcut of :mod:`rac.run.fast`
        #: (``RAC_FAST_PATH=0`` turns it off; both paths write the same log).
        self.fast_path = os.environ.get("RAC_FAST_PATH", "1") != "0"
        #: (tool, agent) -> what is decided about its calls once (see :mod:`rac.run.plan`)
        self.plans: dict[tuple[str, str], CallPlan] = {}
        #: State adapters keep per engine (keyed by the adapter's package name).
        self.extensions: dict[str, Any] = {}
        self._adapted: dict[tuple[Any, str | None], Tool] = {}
        self.tools: dict[str, Tool] = {}
        #: agent id -> tools registered for that agent (see :meth:`register_tools`)
        self.agent_tools: dict[str, dict[str, Tool]] = {}
        self.retry = retry or RetryPolicy()
        self.compensation_retry = compensation_retry or RetryPolicy(max_attempts=5)
        self.no_compensation: NoCompensationPolicy = no_compensation
        self.clock: Clock = clock or SystemClock()
        self.agent_id = agent_id
        self.max_value_chars = max_value_chars
        self.owner = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"
        #: The leases of this engine's live runs and their heartbeat (see :mod:`rac.leases`).
        self.leases = Leases(self, lease_seconds, heartbeat_seconds)
        #: Exceptions that are framework control flow, not failures (adapters add theirs).
        self.passthrough: tuple[type[BaseException], ...] = ()
        self.plugin_manager = _PluginManager(hookspecs.PROJECT, self._plugins_changed)
        self.plugin_manager.add_hookspecs(hookspecs)
        for name, cls in DEFAULT_PLUGINS.items():
            self.plugin_manager.register(cls(), name=name)
        if load_entrypoints:
            self.plugin_manager.load_setuptools_entrypoints(hookspecs.PROJECT)
        for plugin in plugins:
            self.register_plugin(plugin)
        self.hook = self.plugin_manager.hook
        self._plugins_changed()
        if tools is not None:
            self.tools = tools_by_name([self.adapt_tool(t) for t in tools])
            self.registry.check_known(self.tools)
            self.registry.check_params(self.tools)
        self.store: Store = open_store(store)
        # The store the engine opened (from a URL, or the default) is the engine's: closed with
        # it, or when it is collected. A store object the caller made stays the caller's.
        owned = store is None or isinstance(store, (str, Path))
        self._closer = weakref.finalize(self, self.store.close) if owned else None

    # -- closing ----------------------------------------------------------------------------------
    def close(self) -> None:
        """Close the log's connection if the engine opened the store (from a URL or the
        default); a store object passed in stays open for its owner. Idempotent. Also done
        when the engine is garbage-collected, and by ``with rac.RAC(...) as engine:``."""
        self.leases.close()
        if self._closer is not None:
            self._closer()

    def __enter__(self) -> RAC:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- plugins and tools -----------------------------------------------------------------------
    def register_plugin(self, plugin: object, name: str | None = None) -> None:
        """Register a plugin (an object with ``@rac.hookimpl`` methods)."""
        try:
            self.plugin_manager.register(plugin, name=name)
        except ValueError as e:
            raise ConfigurationError(f"cannot register plugin {plugin!r}: {e}") from e
        except pluggy.PluginValidationError as e:
            raise ConfigurationError(f"plugin {plugin!r} does not match the hookspecs: {e}") from e

    def _plugins_changed(self) -> None:
        if hasattr(self, "plugin_manager"):
            hooks = getattr(self, "hooks", None)
            if hooks is None:
                #: How the engine asks its plugins (see :mod:`rac.dispatch`).
                self.hooks = Hooks(self.plugin_manager)
            else:
                hooks.refresh()

    def normalize_result(self, tool: str, result: Any) -> Any:
        """``result`` as RAC reads it (``rac_normalize_result``; itself with no answer)."""
        norm = self.hooks.first("rac_normalize_result", tool=tool, result=result)
        return result if norm is None else norm

    def resolve_compensation(self, record: Any) -> Any:
        """How to undo ``record`` (through ``rac_resolve_compensation``), or None."""
        return self.hooks.first("rac_resolve_compensation", engine=self, record=record)

    def detect_result_error(self, tool: str, result: Any) -> BaseException | None:
        """The failure a result describes (through ``rac_detect_result_error``), or None."""
        return cast(BaseException | None,
                    self.hooks.first("rac_detect_result_error", tool=tool, result=result))

    def add_passthrough(self, *exc_types: type[BaseException]) -> None:
        """Declare exceptions that are control flow of a framework (interrupts, hand-offs): RAC
        lets them through untouched and never treats them as failures."""
        self.passthrough = tuple(dict.fromkeys([*self.passthrough, *exc_types]))

    def tool_set(self, tools: Iterable[Tool | Callable[..., Any]]) -> ToolSet:
        """``tools`` adapted once, for :meth:`Run.add_tools` to take cheaply run after run
        (an adapter offering an agent's tools to the run of each of its turns)."""
        return ToolSet([self.adapt_tool(t) for t in tools], engine=self)

    def adapt_tool(self, obj: Any, name: str | None = None) -> Tool:
        """A :class:`rac.Tool` for ``obj``: itself, a framework tool adapted by a plugin
        (``rac_adapt_tool``), or a plain function."""
        if isinstance(obj, Tool):
            return obj
        try:
            cached = self._adapted.get((obj, name))
        except TypeError:  # an unhashable tool object: adapt it every time
            cached, obj_key = None, None
        else:
            obj_key = (obj, name)
        if cached is not None:
            return cached
        adapted = self.hooks.first("rac_adapt_tool", tool=obj)
        tool = cast(Tool, adapted) if adapted is not None else as_tool(obj, name=name)
        if obj_key is not None and len(self._adapted) < 4096:
            self._adapted[obj_key] = tool
        return tool

    def register_tools(self, tools: Iterable[Any], *, agent_id: str | None = None) -> None:
        """Make tools callable by the engine (compensators, alternatives) and check the
        declarations that concern them.

        With ``agent_id`` they are that agent's tools: the records of that agent's calls are
        undone through them first (see :meth:`rac.Run.tool`), so the tools of two agents that
        share a name each reach their own system, in recovery too."""
        new = tools_by_name([self.adapt_tool(t) for t in tools])
        if agent_id is not None:
            self.agent_tools.setdefault(agent_id, {}).update(new)
        self.tools.update(new)
        self.registry.check_known(self.tools, only_for=list(new))
        self.registry.check_params(self.tools)

    def register_mcp_tools(self, tools: Iterable[Any], *, server: str | None = None,
                           trusted: bool = False, names: Any = None) -> Any:
        """Add the compensation pairs, alternatives and effect classes that one MCP server's
        tools declare (``Tool`` objects of mcp 1.x/2.x, their dicts, or langchain-mcp-adapters'
        tools). ``trusted=False`` (the default): the server's read-only and idempotency claims
        can only make RAC more careful. Returns a :class:`rac.mcp.MCPDeclarations`; see
        :func:`rac.mcp.register_mcp_tools`."""
        from rac.mcp import register_mcp_tools

        return register_mcp_tools(self, tools, server=server, trusted=trusted, names=names)

    def render(self, report: RecoveryReport) -> str:
        """The text the agent receives for ``report`` (through ``rac_render_report``)."""
        text = self.hooks.first("rac_render_report", report=report)
        return text if isinstance(text, str) else render_report(report)

    # -- runs -----------------------------------------------------------------------------------
    def run(self, *, run_id: str | None = None, agent_id: str | None = None,
            tools: Iterable[Tool | Callable[..., Any]] | ToolSet | None = None) -> Run:
        """A new run (transaction scope); use it as a context manager, sync or async."""
        return Run(self, run_id=run_id, agent_id=agent_id, tools=tools)

    def current_run(self) -> Run | None:
        """The run of this engine open in the current context, if any."""
        run = current_run()
        return run if run is not None and run.engine is self else None

    def wrap(self, fn: F, *, name: str | None = None) -> F:
        """Wrap a tool function so every call runs under RAC.

        Inside an open run the call joins it; outside, it runs in a run of its own. The wrapper
        keeps the function's name, signature and docstring, and works for coroutines.
        """
        tool = self.adapt_tool(fn, name=name)
        self.tools.setdefault(tool.name, tool)
        sig = inspect.signature(fn)

        def bind(*args: Any, **kwargs: Any) -> dict[str, Any]:
            bound = sig.bind(*args, **kwargs)
            return dict(bound.arguments)

        if inspect.iscoroutinefunction(fn):
            @functools.wraps(fn)
            async def awrapper(*args: Any, **kwargs: Any) -> Any:
                run = self.current_run()
                if run is not None:
                    return await run.acall(tool, **bind(*args, **kwargs))
                async with self.run() as own:
                    return await own.acall(tool, **bind(*args, **kwargs))
            return cast(F, awrapper)

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            run = self.current_run()
            if run is not None:
                return run.call(tool, **bind(*args, **kwargs))
            with self.run() as own:
                return own.call(tool, **bind(*args, **kwargs))
        return cast(F, wrapper)

    # -- crash recovery (rac.recovery) ----------------------------------------------------------
    def recover(self, run_ids: Iterable[str] | None = None, *, lease_seconds: float = 300.0,
                stale_after: float | None = None,
                progress: Callable[[int, int, str], None] | None = None) -> list[Any]:
        """Recover runs left unfinished by a dead process: claim each (one recoverer per run)
        and compensate everything it completed, in-doubt calls included. Returns a
        :class:`rac.recovery.RecoveredRun` per run; ``progress`` is called after each (done,
        total, what). See :func:`rac.recovery.recover`."""
        from rac.recovery import recover

        return list(recover(self, run_ids, lease_seconds=lease_seconds,
                            stale_after=stale_after, progress=progress))

    async def arecover(self, run_ids: Iterable[str] | None = None, *,
                       lease_seconds: float = 300.0,
                       stale_after: float | None = None) -> list[Any]:
        """Async :meth:`recover`."""
        from rac.recovery import arecover

        return list(await arecover(self, run_ids, lease_seconds=lease_seconds,
                                   stale_after=stale_after))

    def resume(self, run_id: str) -> Any:
        """Retry a run's failed compensations (dead letters) after the cause was fixed.
        Returns a :class:`rac.recovery.RecoveredRun`. See :func:`rac.recovery.resume`."""
        from rac.recovery import resume

        return resume(self, run_id)

    def resolve(self, run_id: str, seq: int, *, note: str, by: str | None = None) -> Any:
        """Record that a person settled what a rollback left live (see
        :func:`rac.recovery.resolve`); returns the run's :class:`rac.RunInfo`."""
        from rac.recovery import resolve

        return resolve(self, run_id, seq, note=note, by=by)

    def undo(self, run_id: str, *, why: str = "", by: str | None = None,
             preview: bool = False, unchecked: bool = False) -> Any:
        """Undo a completed run later, on request: each effect is checked against the live
        world first (its lookup or before-image); what drifted since the run is named and left
        alone. Returns a :class:`rac.undo.Undone`. See :func:`rac.undo.undo`."""
        from rac.undo import undo

        return undo(self, run_id, why=why, by=by, preview=preview, unchecked=unchecked)

    async def aundo(self, run_id: str, *, why: str = "", by: str | None = None,
                    preview: bool = False, unchecked: bool = False) -> Any:
        """Async :meth:`undo`."""
        from rac.undo import aundo

        return await aundo(self, run_id, why=why, by=by, preview=preview, unchecked=unchecked)

    async def aresume(self, run_id: str) -> Any:
        """Async :meth:`resume`."""
        from rac.recovery import aresume

        return await aresume(self, run_id)
