"""The wrapper that puts one LlamaIndex tool under RAC, keeping everything the agent reads."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from llama_index.core.tools import FunctionTool, ToolOutput
from llama_index.core.tools.types import AsyncBaseTool, BaseTool, adapt_to_async_tool

import rac
from rac import adapters
from rac_llamaindex.results import as_output, failure_output
from rac_llamaindex.tool_table import CALL_CONTEXT, CALLING, tool_name, unwrap
from rac_llamaindex.turns import batch_of

#: Where to register a tool RAC names that the agent does not have.
_HINT = "give it to the agent, or to enable_rac(..., tools=[...]) or rac.RAC(tools=[...])"


async def _never_called(**kwargs: Any) -> Any:  # pragma: no cover - acall/call are overridden
    raise AssertionError("a RACFunctionTool calls its inner tool, never this function")


class RACFunctionTool(FunctionTool):
    """A LlamaIndex tool whose every call runs under RAC.

    The agent sees the user's tool unchanged: the same metadata (name, description, argument
    schema, ``return_direct``), the same ``Context`` parameter (LlamaIndex passes ``ctx`` to the
    wrapper, which hands it to the tool), the same function for a ``CodeActAgent``'s prompt. Each
    call joins the RAC run open in its context (the run of the agent's ``run()``, or an explicit
    ``async with engine.run()``), or is a run of its own outside any. RAC calls the inner tool
    (again, for retries), its alternatives and compensators directly and sees their raw
    exceptions. A call RAC could not complete returns the recovery report as an error output.
    """

    def __init__(self, inner: BaseTool, engine: rac.RAC, *, agent_id: str | None = None,
                 peers: rac.ToolSet | None = None, delegating: bool = False) -> None:
        inner = unwrap(inner)
        super().__init__(async_fn=_never_called, metadata=inner.metadata)
        # FunctionTool read these from _never_called; the agent must see the inner tool's.
        self.requires_context = bool(getattr(inner, "requires_context", False))
        self.ctx_param_name: str | None = getattr(inner, "ctx_param_name", None)
        self.partial_params = {}  # the inner tool applies its own
        self._inner = inner
        self._inner_async: AsyncBaseTool = adapt_to_async_tool(inner)
        self._engine = engine
        self._agent_id = agent_id
        self._peers = peers
        self._name = tool_name(inner)
        self._delegating = delegating

    @property
    def rac_inner(self) -> BaseTool:
        """The user's tool."""
        return self._inner

    @property
    def rac_engine(self) -> rac.RAC:
        """The engine this tool's calls run under."""
        return self._engine

    @property
    def rac_peers(self) -> rac.ToolSet | None:
        """The tools of this tool's agent, offered to each run its calls join."""
        return self._peers

    def offer(self, peers: rac.ToolSet) -> None:
        """Offer ``peers`` (the tools of this tool's agent) to the runs its calls join."""
        self._peers = peers

    @property
    def rac_delegating(self) -> bool:
        """True for a delegating tool (an agent used as a tool, CodeAct's ``execute``): its
        calls are not logged; the calls made inside them are (see
        :mod:`rac.adapters.delegation`)."""
        return self._delegating

    @property
    def rac_agent_id(self) -> str | None:
        """The agent id this tool's calls are recorded under."""
        return self._agent_id

    @property
    def real_fn(self) -> Callable[..., Any]:
        """The user's function (what a ``CodeActAgent`` describes to its model)."""
        fn = getattr(self._inner, "real_fn", None)
        return fn if callable(fn) else super().real_fn

    # -- calls ---------------------------------------------------------------------------------
    def _split(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[dict[str, Any], Any]:
        """The call's arguments as RAC logs them, and the workflow context (if the tool takes
        one)."""
        if args:
            raise TypeError(f"tool {self._name!r} takes keyword arguments only under RAC "
                            f"(got {len(args)} positional)")
        ctx = kwargs.pop(self.ctx_param_name, None) if self.ctx_param_name else None
        return kwargs, ctx

    def _ctx_kwargs(self, ctx: Any) -> dict[str, Any]:
        return {self.ctx_param_name: ctx} if ctx is not None and self.ctx_param_name else {}

    def _run_of(self) -> rac.Run | None:
        run = self._engine.current_run()
        if run is not None and self._peers is not None \
                and run.tool(self._name, self._agent_id) is not self._peers.by_name.get(
                    self._name):
            # a run this tool's agent did not open, or whose tools of these names are
            # another agent's: this agent's calls are undone through its own tools
            run.add_tools(self._peers, agent_id=self._agent_id)
        return run

    async def acall(self, *args: Any, **kwargs: Any) -> ToolOutput:
        """Call the tool under RAC (how agents and workflows call it)."""
        call_args, ctx = self._split(args, kwargs)
        run = self._run_of()
        call = self._adelegate if self._delegating else self._acall
        if run is not None:
            return await call(run, call_args, ctx)
        # Called outside any run (directly, or by a workflow RAC does not scope): a run of its own.
        async with self._engine.run(agent_id=self._agent_id, tools=self._peers) as own:
            return await call(own, call_args, ctx)

    async def _adelegate(self, run: rac.Run, args: dict[str, Any], ctx: Any) -> ToolOutput:
        """A delegating call: the inner tool runs unlogged, in ``run`` (current here), and
        answers what RAC told the calls made inside it that failed for good."""
        token = CALL_CONTEXT.set(ctx)
        delegation = adapters.Delegation()
        try:
            with delegation:
                out = await self._inner_async.acall(**args, **self._ctx_kwargs(ctx))
        except self._engine.passthrough:
            raise
        except Exception as e:
            return self._delegation_failed(delegation, e, args)
        finally:
            CALL_CONTEXT.reset(token)
        return self._told(delegation, out)

    def _delegate(self, run: rac.Run, args: dict[str, Any], ctx: Any) -> ToolOutput:
        """Blocking :meth:`_adelegate`."""
        token = CALL_CONTEXT.set(ctx)
        delegation = adapters.Delegation()
        try:
            with delegation:
                out = self._inner_async.call(**args, **self._ctx_kwargs(ctx))
        except self._engine.passthrough:
            raise
        except Exception as e:
            return self._delegation_failed(delegation, e, args)
        finally:
            CALL_CONTEXT.reset(token)
        return self._told(delegation, out)

    def _delegation_failed(self, delegation: adapters.Delegation, error: Exception,
                           args: dict[str, Any]) -> ToolOutput:
        """The output of a delegating call that raised: the error raised again when nothing
        inside failed under RAC, else an error output carrying RAC's reports."""
        if not delegation.heard:
            raise error
        return self._told(delegation, ToolOutput(
            content=f"{type(error).__name__}: {error}", tool_name=self._name,
            raw_input={"args": (), "kwargs": args}, raw_output=None, is_error=True,
            exception=error))

    @staticmethod
    def _told(delegation: adapters.Delegation, out: ToolOutput) -> ToolOutput:
        if not delegation.heard:
            return out
        return ToolOutput(content=delegation.answer(out.content or ""), tool_name=out.tool_name,
                          raw_input=out.raw_input, raw_output=out.raw_output,
                          is_error=out.is_error, exception=out.exception)

    async def _acall(self, run: rac.Run, args: dict[str, Any], ctx: Any) -> ToolOutput:
        name = self._name
        inner = self._inner_async
        ctx_kwargs = self._ctx_kwargs(ctx)

        async def acall(call_args: dict[str, Any]) -> Any:
            mark = CALLING.set(name)
            try:
                return await inner.acall(**call_args, **ctx_kwargs)
            finally:
                CALLING.reset(mark)

        token = CALL_CONTEXT.set(ctx)
        try:
            outcome = await adapters.aexecute(
                run, name, args, adapters.aroute(run, name, acall, hint=_HINT,
                                                 agent_id=self._agent_id),
                agent_id=self._agent_id, batch=batch_of(run, self._agent_id))
        finally:
            CALL_CONTEXT.reset(token)
        if outcome.ok:
            return as_output(outcome.result, outcome.tool, args)
        return failure_output(outcome, name, args)

    def call(self, *args: Any, **kwargs: Any) -> ToolOutput:
        """Call the tool under RAC, blocking (agents call :meth:`acall`; this serves sync
        callers)."""
        call_args, ctx = self._split(args, kwargs)
        run = self._run_of()
        call = self._delegate if self._delegating else self._call
        if run is not None:
            return call(run, call_args, ctx)
        with self._engine.run(agent_id=self._agent_id, tools=self._peers) as own:
            return call(own, call_args, ctx)

    def _call(self, run: rac.Run, args: dict[str, Any], ctx: Any) -> ToolOutput:
        name = self._name
        inner = self._inner_async
        ctx_kwargs = self._ctx_kwargs(ctx)

        def call(call_args: dict[str, Any]) -> Any:
            mark = CALLING.set(name)
            try:
                return inner.call(**call_args, **ctx_kwargs)
            finally:
                CALLING.reset(mark)

        token = CALL_CONTEXT.set(ctx)
        try:
            outcome = adapters.execute(
                run, name, args, adapters.route(run, name, call, hint=_HINT,
                                                agent_id=self._agent_id),
                agent_id=self._agent_id, batch=batch_of(run, self._agent_id))
        finally:
            CALL_CONTEXT.reset(token)
        if outcome.ok:
            return as_output(outcome.result, outcome.tool, args)
        return failure_output(outcome, name, args)

    def __call__(self, *args: Any, **kwargs: Any) -> ToolOutput:
        return self.call(*args, **kwargs)
