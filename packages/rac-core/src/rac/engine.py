"""The RAC engine: declarations, the log, plugins, and the runs that use them."""

from __future__ import annotations

import functools
import inspect
import os
import socket
import uuid
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, Literal, TypeVar, cast

import pluggy

from rac import hookspecs
from rac.classify import default_detect_result_error
from rac.clock import Clock, SystemClock
from rac.errors import ConfigurationError
from rac.plugins import (
    DEFAULT_PLUGINS,
    DefaultArgumentMapper,
    RegistryCompensations,
    StructuredResultErrors,
)
from rac.registry import CompensationRegistry, CompensationSpec
from rac.report import RecoveryReport, render_report
from rac.retry import RetryPolicy
from rac.run import Run, current_run
from rac.serialize import DEFAULT_MAX_CHARS
from rac.stores import Store, open_store
from rac.tools import Tool, ToolSet, as_tool, tools_by_name

F = TypeVar("F", bound=Callable[..., Any])
NoCompensationPolicy = Literal["warn", "assume_read_only", "refuse"]
_POLICIES = ("warn", "assume_read_only", "refuse")


def _is_method(fn: Callable[..., Any] | None, method: Callable[..., Any]) -> bool:
    """True if ``fn`` is ``method`` bound to an instance of its class."""
    return getattr(fn, "__func__", None) is method


class _PluginManager(pluggy.PluginManager):
    """A plugin manager that tells the engine when plugins come and go (to refresh the
    hot-path shortcuts)."""

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
        max_value_chars: size above which a logged argument or result is stored truncated with
            its hash.
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
                 max_value_chars: int = DEFAULT_MAX_CHARS) -> None:
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
        self.registry = CompensationRegistry(compensations, alternatives, read_only)
        #: State adapters keep per engine (keyed by the adapter's package name).
        self.extensions: dict[str, Any] = {}
        self._adapted: dict[tuple[Any, str | None], Tool] = {}
        self.tools: dict[str, Tool] = {}
        self.retry = retry or RetryPolicy()
        self.compensation_retry = compensation_retry or RetryPolicy(max_attempts=5)
        self.no_compensation: NoCompensationPolicy = no_compensation
        self.clock: Clock = clock or SystemClock()
        self.agent_id = agent_id
        self.max_value_chars = max_value_chars
        self.owner = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"
        #: Exceptions that are framework control flow, not failures (adapters add theirs).
        self.passthrough: tuple[type[BaseException], ...] = ()
        self._normalizes = self._notify_records = self._notify_runs = False
        self._normalize_one: Callable[..., Any] | None = None
        self._notify_rollbacks = False
        self._resolve_fast: Callable[..., Any] | None = None
        self._detect_fast: Callable[..., Any] | None = None
        # Set while only the default plugin answers: the hot path reads the registry and runs
        # the default detection directly, without a plugin call.
        self._pairs_direct = False
        self._detect_direct = False
        self._map_direct = False
        self._map_fast: Callable[..., Any] | None = None
        self._auto_approve = False
        self.plugin_manager = _PluginManager(hookspecs.PROJECT, self._refresh_hook_flags)
        self.plugin_manager.add_hookspecs(hookspecs)
        for name, cls in DEFAULT_PLUGINS.items():
            self.plugin_manager.register(cls(), name=name)
        if load_entrypoints:
            self.plugin_manager.load_setuptools_entrypoints(hookspecs.PROJECT)
        for plugin in plugins:
            self.register_plugin(plugin)
        self.hook = self.plugin_manager.hook
        if tools is not None:
            self.tools = tools_by_name([self.adapt_tool(t) for t in tools])
            self.registry.check_known(self.tools)
        self.store: Store = open_store(store)

    # -- plugins and tools -----------------------------------------------------------------------
    def register_plugin(self, plugin: object, name: str | None = None) -> None:
        """Register a plugin (an object with ``@rac.hookimpl`` methods)."""
        try:
            self.plugin_manager.register(plugin, name=name)
        except ValueError as e:
            raise ConfigurationError(f"cannot register plugin {plugin!r}: {e}") from e
        except pluggy.PluginValidationError as e:
            raise ConfigurationError(f"plugin {plugin!r} does not match the hookspecs: {e}") from e

    def _refresh_hook_flags(self) -> None:
        """Cache which hooks have implementations beyond the defaults, so the hot path of a
        call skips pluggy's dispatch when only a default plugin would answer."""
        if not hasattr(self, "plugin_manager"):
            return
        hook = self.plugin_manager.hook
        normalizers = hook.rac_normalize_result.get_hookimpls()
        self._normalizes = bool(normalizers)
        # One normalizer (an adapter's, usually): called directly, without pluggy's dispatch.
        self._normalize_one = normalizers[0].function \
            if len(normalizers) == 1 and not normalizers[0].hookwrapper \
            and not normalizers[0].wrapper else None
        self._notify_rollbacks = bool(hook.rac_rollback_started.get_hookimpls()
                                      or hook.rac_rollback_finished.get_hookimpls())
        self._notify_records = bool(hook.rac_record_written.get_hookimpls())
        self._notify_runs = bool(hook.rac_run_status_changed.get_hookimpls())
        self._resolve_fast = self._sole_default(hook.rac_resolve_compensation,
                                                "rac.default.compensations")
        self._detect_fast = self._sole_default(hook.rac_detect_result_error,
                                               "rac.default.result_errors")
        self._map_fast = self._sole_default(hook.rac_map_compensation_args,
                                            "rac.default.mapping")
        self._auto_approve = self._sole_default(hook.rac_approve_compensation,
                                                "rac.default.approve") is not None
        self._pairs_direct = _is_method(self._resolve_fast,
                                        RegistryCompensations.rac_resolve_compensation)
        self._detect_direct = _is_method(self._detect_fast,
                                         StructuredResultErrors.rac_detect_result_error)
        self._map_direct = _is_method(self._map_fast,
                                      DefaultArgumentMapper.rac_map_compensation_args)

    @staticmethod
    def _sole_default(caller: Any, name: str) -> Callable[..., Any] | None:
        impls = caller.get_hookimpls()
        if len(impls) == 1 and impls[0].plugin_name == name:
            return cast(Callable[..., Any], impls[0].function)
        return None

    def normalize_result(self, tool: str, result: Any) -> Any:
        """``result`` as RAC reads it (``rac_normalize_result``; itself when no plugin changes
        it)."""
        one = self._normalize_one
        norm = one(tool=tool, result=result) if one is not None \
            else self.hook.rac_normalize_result(tool=tool, result=result)
        return result if norm is None else norm

    def resolve_compensation(self, record: Any) -> Any:
        """How to undo ``record`` (through ``rac_resolve_compensation``), or None."""
        if self._pairs_direct:
            return self.registry.pairs.get(record.tool)
        if self._resolve_fast is not None:
            return self._resolve_fast(engine=self, record=record)
        return self.hook.rac_resolve_compensation(engine=self, record=record)

    def map_compensation_args(self, **kw: Any) -> dict[str, Any] | None:
        """The compensating call's arguments (through ``rac_map_compensation_args``)."""
        if self._map_fast is not None:
            return cast(dict[str, Any], self._map_fast(**kw))
        return cast("dict[str, Any] | None", self.hook.rac_map_compensation_args(**kw))

    def approve_compensation(self, **kw: Any) -> bool:
        """False if a plugin holds this compensation (``rac_approve_compensation``)."""
        if self._auto_approve:
            return True
        return self.hook.rac_approve_compensation(**kw) is not False

    def detect_result_error(self, tool: str, result: Any) -> BaseException | None:
        """The failure a result describes (through ``rac_detect_result_error``), or None."""
        if self._detect_direct:
            return default_detect_result_error(result)
        if self._detect_fast is not None:
            return cast(BaseException | None, self._detect_fast(tool=tool, result=result))
        return cast(BaseException | None,
                    self.hook.rac_detect_result_error(tool=tool, result=result))

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
        adapted = self.hook.rac_adapt_tool(tool=obj)
        tool = cast(Tool, adapted) if adapted is not None else as_tool(obj, name=name)
        if obj_key is not None and len(self._adapted) < 4096:
            self._adapted[obj_key] = tool
        return tool

    def register_tools(self, tools: Iterable[Any]) -> None:
        """Make tools callable by the engine (compensators, alternatives) and check the
        declarations that concern them."""
        new = tools_by_name([self.adapt_tool(t) for t in tools])
        self.tools.update(new)
        self.registry.check_known(self.tools, only_for=list(new))

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
        text = self.hook.rac_render_report(report=report)
        return cast(str, text) if text is not None else render_report(report)

    # -- runs -----------------------------------------------------------------------------------
    def run(self, *, run_id: str | None = None, agent_id: str | None = None,
            tools: Iterable[Tool | Callable[..., Any]] | None = None) -> Run:
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
                stale_after: float | None = None) -> list[Any]:
        """Recover runs left unfinished by a dead process: claim each (one recoverer per run)
        and compensate everything it completed, in-doubt calls included. Returns a
        :class:`rac.recovery.RecoveredRun` per run. See :func:`rac.recovery.recover`."""
        from rac.recovery import recover

        return list(recover(self, run_ids, lease_seconds=lease_seconds,
                            stale_after=stale_after))

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

    async def aresume(self, run_id: str) -> Any:
        """Async :meth:`resume`."""
        from rac.recovery import aresume

        return await aresume(self, run_id)
