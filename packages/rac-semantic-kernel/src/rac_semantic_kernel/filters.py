"""The two kernel filters that put a kernel's function calls under RAC.

The AUTO_FUNCTION_INVOCATION filter sees each function call the model makes (the kernel runs
the calls of one model turn in parallel, as one batch) and runs it through ``Run.aexecute``:
the first attempt and every retry are ``await next(ctx)``, so the rest of the filter chain and
the function run each time. Semantic Kernel's innermost handler catches any exception and keeps
only the text "An error occurred while invoking the function ..."; the real exception passes
through the FUNCTION_INVOCATION filter on its way there, which hands it to the auto filter
through a context variable, and that exception is what RAC classifies. On an unrecoverable
failure the model gets the rendered recovery report as the function's result and the loop goes
on, so the model can replan.

Functions of an orchestration's control plugin (``Handoff``) pass straight through, and so does
SK's own control flow (``OperationCancelledException``): RAC logs the call as not a failure and
the model gets what SK gives it without RAC.
"""

from __future__ import annotations

import sys
import weakref
from collections.abc import Awaitable, Callable, Hashable, Iterable
from contextvars import ContextVar
from copy import copy
from typing import Any

from semantic_kernel import Kernel
from semantic_kernel.contents import ChatHistory, FunctionCallContent
from semantic_kernel.contents.utils.author_role import AuthorRole
from semantic_kernel.exceptions import FunctionExecutionException
from semantic_kernel.filters import AutoFunctionInvocationContext, FunctionInvocationContext
from semantic_kernel.functions import FunctionResult, KernelArguments

import rac
from rac.adapters import CallRefused, Delegation, aexecute, aroute, failure_text
from rac.adapters.resumed import RUN_ID_KEY
from rac.events import emit
from rac.run.outcome import unwrap
from rac_semantic_kernel.declarations import adopt_declarations
from rac_semantic_kernel.functions import (
    CONTROL_PLUGINS,
    RAC_CALLING,
    KernelFunctions,
    Naming,
    signature,
)
from rac_semantic_kernel.mcp_plugins import adopt_mcp_plugin, mcp_target
from rac_semantic_kernel.runs import HeldElsewhere, InvocationRuns, runs_of
from rac_semantic_kernel.values import plain_value

#: Text SK's handler puts in place of an exception it caught.
SK_ERROR_PREFIX = "An error occurred while invoking the function "

# [function's fully qualified name, exception it raised, whether RAC's function filter was
# reached]: set by the auto filter around next.
_RAISED: ContextVar[list[Any] | None] = ContextVar("rac_semantic_kernel_raised", default=None)


Next = Callable[[Any], Awaitable[None]]


class InvocationError(Exception):
    """A function failed and Semantic Kernel kept only its message (a filter that is not RAC's
    caught the exception first)."""


def real_error(exc: BaseException) -> BaseException:
    """The exception a function raised, under SK's ``FunctionExecutionException`` wrapper (SK
    wraps, for instance, an MCP tool's failure; the wrapped cause is what happened)."""
    while isinstance(exc, FunctionExecutionException) and exc.__cause__ is not None:
        exc = exc.__cause__
    return exc


def turn_key(history: ChatHistory | None, call: FunctionCallContent | None) -> Hashable | None:
    """The batch of a call: the assistant message of the history that asked for it (every call
    of one model turn is in one message)."""
    if history is None or call is None:
        return None
    for message in reversed(history.messages):
        if any(item is call for item in message.items):
            return ("sk-turn", id(history), id(message))
    return None


def agent_name(history: ChatHistory | None) -> str | None:
    """The name of the agent whose invocation ``history`` is: a ``ChatCompletionAgent`` puts
    its instructions first, as a system message carrying its name."""
    if history is None:
        return None
    for message in history.messages:
        if message.role in (AuthorRole.SYSTEM, AuthorRole.DEVELOPER):
            return message.name or None
        break
    return None


def in_runtime_task() -> bool:
    """True if this code runs for an agent of an agent runtime (SK's ``InProcessRuntime`` marks
    each message's handling with ``MessageHandlerContext``; the module is looked up, not
    imported: an application that never loaded it runs no runtime)."""
    module = sys.modules.get("semantic_kernel.agents.runtime.in_process.message_handler_context")
    handler = getattr(module, "MessageHandlerContext", None)
    if handler is None:
        return False
    try:
        handler.agent_id()
    except RuntimeError:  # not inside a message handler
        return False
    return True


#: Where SK defines the kernel function an agent added to a kernel as a plugin is called by.
_AGENT_MODULE = "semantic_kernel.agents.agent"
#: What the model is told of a call RAC refused because its undo is not available.
_NO_UNDO = ("RAC: not run: {name} could not be undone if the work failed later (its "
            "compensation is not available), so it was not called. Tell the user.")
#: What the model is told of a call on a restored history whose run another process carries on.
_HELD_ELSEWHERE = ("RAC: not run: {name} belongs to work another process is still carrying "
                   "on (this conversation was restored while that process works on it), so "
                   "it was not called. Tell the user.")
#: What the model is told of a call made by an orchestration outside any run.
_OUTSIDE_RUN = ("RAC: not run: {name} was asked for by an agent of an orchestration whose "
                "runtime was started outside a RAC run, so it could not be undone with the "
                "rest of the work. Tell the user.")


class _KernelState:
    """What the filter keeps per kernel object (a kernel and its clones are separate)."""

    __slots__ = ("kernel", "signature", "version", "functions", "tool_set", "mcp",
                 "mcp_sessions", "broken")

    def __init__(self, kernel: Kernel) -> None:
        self.kernel = weakref.ref(kernel)
        self.signature: Any = None
        self.version = -1
        self.functions: KernelFunctions | None = None
        self.tool_set: rac.ToolSet | None = None
        #: id(MCP plugin) -> (plugin, {MCP tool name: logged name})
        self.mcp: dict[int, tuple[Any, dict[str, str]]] = {}
        #: id(MCP plugin) -> id of the session whose declarations were read
        self.mcp_sessions: dict[int, int] = {}
        #: logged name -> why its declaration cannot be adopted (a plugin added mid-run whose
        #: compensator is missing): its calls are refused
        self.broken: dict[str, str] = {}

    def mcp_pending(self) -> bool:
        """True if an MCP plugin of the kernel has a session whose declarations are unread."""
        return any(self.mcp_sessions.get(key) != id(getattr(owner, "session", None))
                   for key, (owner, _) in self.mcp.items())


class FunctionCallFilter:
    """The RAC filter pair of one ``enable_rac`` call: holds the engine, the agent id and how
    functions are named in the log.

    :func:`rac_semantic_kernel.enable_rac` registers :meth:`auto` as the kernel's
    ``auto_function_invocation`` filter and :meth:`function` as its ``function_invocation``
    filter.
    """

    def __init__(self, engine: rac.RAC, agent_id: str | None, naming: Naming,
                 trusted_mcp: Iterable[str] = (), delegates: Iterable[str] = ()) -> None:
        self.engine = engine
        self.agent_id = agent_id
        self.naming: Naming = naming
        self.trusted_mcp = frozenset(trusted_mcp)
        #: functions that hand work to another agent (see :mod:`rac.adapters.delegation`), as
        #: the user named them
        self.delegates = frozenset(delegates)
        self.runs: InvocationRuns = runs_of(engine)
        self._kernels: dict[int, _KernelState] = {}
        #: id -> the kernels enable_rac registered this pair on (a clone carries the pair too)
        self._enabled: dict[int, weakref.ref[Kernel]] = {}

    def enabled_on(self, kernel: Kernel) -> bool:
        """True if ``enable_rac`` registered this pair on ``kernel`` itself (not on the kernel
        it was cloned from)."""
        found = self._enabled.get(id(kernel))
        return found is not None and found() is kernel

    def mark_enabled(self, kernel: Kernel) -> None:
        """Note that ``enable_rac`` registered this pair on ``kernel``."""
        self._enabled[id(kernel)] = weakref.ref(kernel)
        weakref.finalize(kernel, self._enabled.pop, id(kernel), None)

    def __deepcopy__(self, memo: dict[int, Any]) -> FunctionCallFilter:
        """Itself: ``Kernel.clone()`` deep-copies its filter lists (a handoff orchestration
        clones each agent's kernel), and the clone must keep RAC's engine and state, not
        copies of them."""
        return self

    # -- per-kernel state ---------------------------------------------------------------------
    def prepare(self, kernel: Kernel, *, strict: bool = True) -> _KernelState:
        """Check and adopt the engine's declarations for ``kernel``'s functions (now, and again
        whenever its plugins or the declarations change).

        Raises :class:`rac.ConfigurationError` for a declaration RAC cannot follow; not
        ``strict`` (a call, after a plugin was added mid-run), it is kept in the state's
        ``broken`` instead and only the calls it concerns are refused."""
        state = self._kernels.get(id(kernel))
        if state is None or state.kernel() is not kernel:
            state = _KernelState(kernel)
            self._kernels[id(kernel)] = state
            weakref.finalize(kernel, self._kernels.pop, id(kernel), None)
        sig = signature(kernel)
        if state.signature != sig or state.version != self.engine.registry.version:
            functions = KernelFunctions(kernel, self.naming)
            broken: dict[str, str] = {}
            adopt_declarations(self.engine, functions, None if strict else broken)
            for name, why in broken.items():
                emit("rac_semantic_kernel.declaration", level="error", function=name,
                     status="refused", error=why)
            state.broken = broken
            state.functions = functions
            state.tool_set = self.engine.tool_set(functions.tools())
            state.signature = sig
            state.version = self.engine.registry.version
            state.mcp = {}
            for name, fn in functions.by_name.items():
                target = mcp_target(fn)
                if target is not None:
                    owner, mcp_name = target
                    state.mcp.setdefault(id(owner), (owner, {}))[1][mcp_name] = name
        return state

    async def _adopt_mcp(self, kernel: Kernel, state: _KernelState) -> _KernelState:
        """Register the declarations of the kernel's MCP plugins whose session is new."""
        for key, (owner, names) in list(state.mcp.items()):
            session = getattr(owner, "session", None)
            if state.mcp_sessions.get(key) == id(session):
                continue
            await adopt_mcp_plugin(self.engine, owner, names,
                                   trusted=getattr(owner, "name", None) in self.trusted_mcp)
            state.mcp_sessions[key] = id(session)
        state.version = -1  # the declarations changed: adopt them under the logged names
        return self.prepare(kernel)

    # -- the filters ---------------------------------------------------------------------------
    async def auto(self, ctx: AutoFunctionInvocationContext, next: Next) -> None:
        """AUTO_FUNCTION_INVOCATION filter: run the model's call under RAC."""
        fn = ctx.function
        if fn.plugin_name in CONTROL_PLUGINS:
            await next(ctx)
            return
        engine = self.engine
        kernel = ctx.kernel
        state = self.prepare(kernel, strict=False)
        if state.mcp and state.mcp_pending():
            state = await self._adopt_mcp(kernel, state)
        functions, tool_set = state.functions, state.tool_set
        assert functions is not None and tool_set is not None
        full = fn.fully_qualified_name
        name = functions.logged.get(full, full)
        run = engine.current_run()
        refusal = _NO_UNDO if name in state.broken else \
            _OUTSIDE_RUN if run is None and in_runtime_task() else None
        if refusal is not None:
            emit("rac_semantic_kernel.call", level="error", function=name, status="refused",
                 error=state.broken.get(name, "an orchestration's runtime was started "
                                              "outside a RAC run: start it inside "
                                              "`async with engine.run()`"))
            ctx.function_result = FunctionResult(function=fn.metadata,
                                                 value=refusal.format(name=name))
            return
        agent = self.agent_of(kernel, ctx.chat_history)
        own = run is None
        if run is None:
            try:
                run = self.runs.run_for(ctx.chat_history, agent) \
                    if ctx.chat_history is not None else engine.run(agent_id=agent)
            except HeldElsewhere as e:  # a restored history whose run another process holds
                emit("rac_semantic_kernel.call", level="error", function=name,
                     status="refused", error=str(e))
                ctx.function_result = FunctionResult(function=fn.metadata,
                                                     value=_HELD_ELSEWHERE.format(name=name))
                return
        # this kernel's functions are this agent's: another agent's plugin of the same name
        # (another vendor's system) never undoes this agent's calls
        run.add_tools(tool_set, agent_id=agent or run.agent_id)
        if self.delegating(fn):
            try:
                await self._delegate(ctx, next, run)
            finally:
                if own:
                    await run.afinish()
            return
        call = ctx.function_call_content
        base = ctx.arguments
        # The function's own arguments: SK has parsed the model's call into ctx.arguments (on
        # top of the invocation's arguments, which the function does not take).
        params = functions.params.get(name)
        requested = {p: base[p] for p in params if p in base} if params is not None \
            else dict(base)
        answered: list[FunctionResult | None] = [None]

        async def through_filters(args: dict[str, Any]) -> Any:
            if args != requested:  # RAC changed them (an idempotency key): SK's copy, updated
                call_args = copy(base)  # (copying and assigning cost ~15 µs: not on every call)
                call_args.update(args)
                ctx.arguments = call_args
            slot: list[Any] = [full, None, False]
            token = _RAISED.set(slot)
            self._innermost(kernel)
            try:
                await next(ctx)
            finally:
                _RAISED.reset(token)
            if slot[1] is not None:
                raise slot[1]
            if not slot[2]:  # a filter outside RAC's answered without calling the function
                raise CallRefused(ctx.function_result,
                                  f"{name} was not run: a filter of the kernel answered for it")
            value = ctx.function_result.value if ctx.function_result is not None else None
            if isinstance(value, str) and value.startswith(SK_ERROR_PREFIX):
                raise InvocationError(value)
            return plain_value(value)

        def kernel_function(other: str) -> Callable[[dict[str, Any]], Awaitable[Any]] | None:
            target = functions.by_name.get(other)
            if target is None:
                return None

            async def invoke(args: dict[str, Any]) -> Any:
                marker = RAC_CALLING.set(target.fully_qualified_name)
                try:
                    result = await target.invoke(kernel, KernelArguments(**args))
                except FunctionExecutionException as e:
                    raise real_error(e) from e
                finally:
                    RAC_CALLING.reset(marker)
                answered[0] = result
                return plain_value(result.value if result is not None else None)

            return invoke

        ainvoke = aroute(run, name, through_filters, through=kernel_function,
                         hint="add it to the kernel, or register it with rac.RAC(tools=[...])",
                         agent_id=agent or run.agent_id)
        try:
            outcome = await aexecute(run, name, requested, ainvoke, agent_id=agent,
                                     batch=turn_key(ctx.chat_history, call))
        except engine.passthrough:
            return  # SK's control flow: the model gets what SK's own handler gave it
        finally:
            if own:
                await run.afinish()  # the log's write off the event loop
        if not outcome.ok:
            ctx.function_result = FunctionResult(function=fn.metadata,
                                                 value=failure_text(outcome))
        elif outcome.tool != name:  # an alternative answered for the requested function
            value = answered[0].value if answered[0] is not None else outcome.result
            ctx.function_result = FunctionResult(function=fn.metadata, value=value)
        if own and ctx.function_result is not None:  # a history saved from here on and
            ctx.function_result.metadata[RUN_ID_KEY] = run.run_id  # restored continues it

    def agent_of(self, kernel: Kernel, history: ChatHistory | None) -> str | None:
        """The agent id of a call made through ``kernel``: the one enabled for it; for a
        clone of an enabled kernel that was not enabled itself, the name of the agent whose
        invocation it is (a handoff orchestration's clone of the agent's own kernel, or a
        user's clone given to another agent), else the enabled one's."""
        if self.enabled_on(kernel):
            return self.agent_id
        return agent_name(history) or self.agent_id

    def delegating(self, fn: Any) -> bool:
        """True if ``fn`` hands work to another agent: an agent added to the kernel as a
        plugin (SK's own agent-as-function, which awaits that agent's ``get_response``), or a
        function named in ``delegates=``."""
        method = getattr(fn, "method", None)
        if getattr(method, "__module__", None) == _AGENT_MODULE \
                and getattr(method, "__name__", None) == "_as_kernel_function":
            return True
        if not self.delegates:
            return False
        names = {fn.fully_qualified_name, fn.name, f"{fn.plugin_name}.{fn.name}"}
        return not self.delegates.isdisjoint(names)

    async def _delegate(self, ctx: AutoFunctionInvocationContext, next: Next,
                        run: rac.Run) -> None:
        """A delegating call: not logged; the function runs with ``run`` current, so the
        agents it invokes join it, and its result carries what RAC told their calls that
        failed for good."""
        marker = RAC_CALLING.set(ctx.function.fully_qualified_name)  # not a direct call
        try:
            with Delegation(run) as delegation:
                await next(ctx)
        finally:
            RAC_CALLING.reset(marker)
        if delegation.heard:
            value = ctx.function_result.value if ctx.function_result is not None else ""
            ctx.function_result = FunctionResult(
                function=ctx.function.metadata,
                value=delegation.answer("" if value is None else str(value)))

    def _innermost(self, kernel: Kernel) -> None:
        """Keep RAC's function filter the innermost of the kernel's: filters run in
        registration order, and a user's error-handling filter added after ``enable_rac``
        would otherwise catch a function's exception before RAC saw it (a failed call logged
        completed, nothing rolled back)."""
        filters = kernel.function_invocation_filters  # the first is the innermost (SK's
        if filters and getattr(filters[0][1], "__self__", None) is self:  # add_filter
            return  # inserts at 0, construct_call_stack wraps from the front)
        for i, (_, f) in enumerate(filters):
            if getattr(f, "__self__", None) is self:
                filters.insert(0, filters.pop(i))
                return

    async def function(self, ctx: FunctionInvocationContext, next: Next) -> None:
        """FUNCTION_INVOCATION filter: note the exception the called function raised, for the
        auto filter, before SK's handler turns it into text. A function invoked directly
        (``kernel.invoke(...)``, not by the model) while a run of the engine is open is a call
        of that run: logged, retried and undone like the model's calls, never invisible."""
        slot = _RAISED.get()
        full = ctx.function.fully_qualified_name
        if slot is None and RAC_CALLING.get() != full \
                and ctx.function.plugin_name not in CONTROL_PLUGINS:
            run = self.engine.current_run()
            if run is not None:
                if self.delegating(ctx.function):  # another agent's calls are the calls
                    with Delegation(run):
                        await next(ctx)
                    return
                await self._direct(ctx, next, run)
                return
        if slot is not None and slot[0] == full:
            slot[2] = True
        try:
            await next(ctx)
        except Exception as e:
            if slot is not None and slot[0] == full:
                slot[1] = real_error(e)
            raise

    async def _direct(self, ctx: FunctionInvocationContext, next: Next, run: rac.Run) -> None:
        """Run a directly invoked function as a call of ``run``; an unrecoverable failure
        leaves ``kernel.invoke`` as :class:`rac.ToolCallFailed` (its report says what was
        undone)."""
        kernel = ctx.kernel
        self._innermost(kernel)
        state = self.prepare(kernel, strict=False)
        functions, tool_set = state.functions, state.tool_set
        assert functions is not None and tool_set is not None
        full = ctx.function.fully_qualified_name
        name = functions.logged.get(full, full)
        if name in state.broken:
            raise rac.ConfigurationError(f"{name} was not run: {state.broken[name]}")
        agent = self.agent_of(kernel, None) or run.agent_id
        run.add_tools(tool_set, agent_id=agent)
        base = ctx.arguments
        params = functions.params.get(name)
        requested = {p: base[p] for p in params if p in base} if params is not None \
            else dict(base)

        async def through_filters(args: dict[str, Any]) -> Any:
            if args != requested:
                call_args = copy(base)
                call_args.update(args)
                ctx.arguments = call_args
            try:
                await next(ctx)
            except FunctionExecutionException as e:
                raise real_error(e) from e
            return plain_value(ctx.result.value if ctx.result is not None else None)

        outcome = await aexecute(run, name, requested, aroute(
            run, name, through_filters,
            hint="add it to the kernel, or register it with rac.RAC(tools=[...])",
            agent_id=agent), agent_id=agent)
        if not outcome.ok:
            unwrap(outcome)
        if outcome.tool != name:  # an alternative answered for the invoked function
            ctx.result = FunctionResult(function=ctx.function.metadata, value=outcome.result)
