"""Turning RAC on for a whole crew, or for one agent, in one call."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any, overload

from crewai import Agent, Crew
from crewai.agents.agent_builder.base_agent import BaseAgent
from crewai.flow.flow import Flow
from crewai.tools import BaseTool
from crewai.utilities.agent_utils import is_inside_event_loop

from rac import RAC, ConfigurationError, Tool
from rac_crewai.approvals import Approver
from rac_crewai.approvals import install as install_approver
from rac_crewai.async_tasks import scope_async_task
from rac_crewai.attempts import aattempt_scoped, attempt_scoped
from rac_crewai.caches import caches_of
from rac_crewai.engine_setup import engine_for
from rac_crewai.flows import enable_flow
from rac_crewai.guarded_tool import RACTool
from rac_crewai.inputs import input_run_id, number_input, numbering_inputs
from rac_crewai.mcp_adapter import adopt_adapter_tools
from rac_crewai.mcp_tools import ServerRef, adopt, configure
from rac_crewai.memory import guarding_memory, scope_memory
from rac_crewai.run_scope import in_async_run, in_run, join, join_members, rac_tools
from rac_crewai.tool_table import (
    agent_tools,
    crew_members,
    crew_tools,
    is_coordination,
    unique_by_name,
    unwrap,
)
from rac_crewai.turns import in_akickoff, in_kickoff, noting_executor

#: Instance attribute holding the engine of an enabled crew or agent.
ENGINE_ATTR = "_rac_crewai_engine"


def enabled_engine(obj: Crew | Agent | Flow[Any]) -> RAC | None:
    """The engine RAC was enabled with on this crew, agent or Flow, if any."""
    engine = obj.__dict__.get(ENGINE_ATTR)
    return engine if isinstance(engine, RAC) else None


def guard(tools: list[BaseTool], engine: RAC, agent_id: str | None,
          peers: list[BaseTool]) -> list[BaseTool]:
    """``tools`` with each one wrapped for ``engine`` exactly once."""
    out: list[BaseTool] = []
    for t in tools:
        if is_coordination(t) or (isinstance(t, RACTool) and t.rac_engine is engine):
            out.append(t)
        else:
            out.append(RACTool(unwrap(t), engine, agent_id=agent_id, peers=peers))
    return out


def guard_in_place(tools: list[BaseTool] | None, engine: RAC, agent_id: str | None,
                   peers: list[BaseTool]) -> None:
    """Wrap a tool list in place: CrewAI tasks may hold the very list their agent was given."""
    if tools:
        tools[:] = guard(tools, engine, agent_id, peers)


def check_declarations(engine: RAC, tools: list[BaseTool]) -> None:
    """Fail now if a compensator or alternative of one of ``tools`` is neither among them nor
    registered with the engine."""
    names = [t.name for t in tools]
    engine.registry.check_known(set(names) | set(engine.tools), only_for=names)


#: Instance attribute naming the engine whose runs an agent's standalone kickoffs open.
KICKOFF_ATTR = "_rac_crewai_kickoff_engine"


def _scope_kickoffs(agent: Any, engine: RAC, prepare: Callable[[], tuple[str, list[Tool]]]
                    ) -> None:
    """Make each standalone ``kickoff`` of ``agent`` (an agent of an enabled crew used on its
    own, or one enabled by itself) one run of ``engine``, as a crew's kickoff is; inside an
    open run it joins it. Its parallel calls of one model turn are one batch. Without
    this the agent's guarded tools, finding no run, would each open one of their own and no
    failure could undo an earlier call.

    Called inside a running event loop (a Flow method, an ``async def``), CrewAI's
    ``kickoff`` does no work: it returns the coroutine of ``kickoff_async``, which does it when
    awaited. That ``kickoff`` opens no run (it would be an empty one, closed before the
    calls); the awaited ``kickoff_async``, scoped too, is the run of the calls."""
    if agent.__dict__.get(KICKOFF_ATTR) is engine:
        return
    cls = type(agent)
    object.__setattr__(agent, KICKOFF_ATTR, engine)
    if callable(getattr(cls, "_prepare_kickoff", None)):
        # The kickoff's own executor holds its model turns: its parallel calls are one batch.
        # The memory tools it adds for the agent's ``memory`` are guarded as a crew's are.
        def guard_memory(tools: list[BaseTool], peers: list[BaseTool]) -> list[BaseTool]:
            return guard(tools, engine, agent.role, peers)

        object.__setattr__(agent, "_prepare_kickoff", noting_executor(
            agent, guarding_memory(engine, guard_memory, cls._prepare_kickoff.__get__(agent))))
    def caches() -> list[Any]:
        return caches_of(agent, [])

    if callable(getattr(cls, "kickoff", None)):
        object.__setattr__(agent, "kickoff", in_run(
            engine, in_kickoff(cls.kickoff.__get__(agent)), prepare, is_inside_event_loop,
            caches=caches))
    for name in ("kickoff_async", "akickoff"):
        if callable(getattr(cls, name, None)):
            object.__setattr__(agent, name, in_async_run(
                engine, in_akickoff(getattr(cls, name).__get__(agent)), prepare,
                caches=caches))


#: Instance attribute naming the engine whose runs an agent's task attempts are scoped in.
ATTEMPTS_ATTR = "_rac_crewai_attempts_engine"
#: Instance attribute of an enabled crew: False if rejected attempts are left as they are.
UNDO_ATTR = "_rac_crewai_undo_rejected"


def _scope_attempts(agent: Any, engine: RAC) -> None:
    """Run each attempt of a guarded task by ``agent`` in a nested scope of the run, the
    rejected attempt undone before the next (:mod:`rac_crewai.attempts`)."""
    if agent.__dict__.get(ATTEMPTS_ATTR) is engine:
        return
    object.__setattr__(agent, ATTEMPTS_ATTR, engine)
    object.__setattr__(agent, "execute_task", attempt_scoped(engine, agent.execute_task))
    object.__setattr__(agent, "aexecute_task", aattempt_scoped(engine, agent.aexecute_task))


#: Instance attribute naming the engine an agent's ``mcps`` tools are guarded for.
MCP_ATTR = "_rac_crewai_mcp_engine"


def _guard_mcp(engine: RAC, agent: Any, tools: list[BaseTool]) -> list[BaseTool]:
    """The tools CrewAI resolved from ``agent.mcps`` for one task or kickoff, wrapped for
    ``engine`` and added to its open run, their servers' declarations registered
    (:mod:`rac_crewai.mcp_tools`)."""
    adopt(engine, tools)
    peers = unique_by_name([unwrap(t) for t in tools] + [unwrap(t) for t in agent_tools(agent)])
    check_declarations(engine, peers)
    run = engine.current_run()
    if run is not None:
        join(run, rac_tools(tools))
        join_members(run, lambda: [(agent.role, rac_tools(tools))])
    return guard(tools, engine, agent.role, peers)


def _scope_mcp(agent: Any, engine: RAC) -> None:
    """Guard the tools CrewAI adds from ``agent.mcps`` inside each task and kickoff, after the
    agent's own tools were wrapped (``agent.get_mcp_tools`` replaced on the instance)."""
    if agent.__dict__.get(MCP_ATTR) is engine:
        return
    resolve = getattr(type(agent), "get_mcp_tools", None)
    if not callable(resolve):
        return
    bound = resolve.__get__(agent)
    object.__setattr__(agent, MCP_ATTR, engine)

    def get_mcp_tools(mcps: Any) -> list[BaseTool]:
        return _guard_mcp(engine, agent, bound(mcps))

    object.__setattr__(agent, "get_mcp_tools", get_mcp_tools)


def _guard_crew(crew: Crew, engine: RAC) -> list[BaseTool]:
    peers = crew_tools(crew)
    adopt_adapter_tools(engine, peers)
    check_declarations(engine, peers)
    undo = crew.__dict__.get(UNDO_ATTR, True)
    for agent in crew_members(crew):
        guard_in_place(agent.tools, engine, agent.role, peers)
        _scope_mcp(agent, engine)

        def prepare(agent: Any = agent) -> tuple[str, list[Tool]]:
            return agent.role, rac_tools(_guard_crew(crew, engine))

        _scope_kickoffs(agent, engine, prepare)
        if undo:
            _scope_attempts(agent, engine)
    for task in crew.tasks:
        guard_in_place(task.tools, engine, task.agent.role if task.agent else None, peers)
        scope_async_task(task, engine)

    def guard_memory(tools: list[BaseTool], memory_peers: list[BaseTool]) -> list[BaseTool]:
        return guard(tools, engine, None, memory_peers)

    scope_memory(crew, engine, guard_memory)
    return peers


def crew_roles(crew: Crew) -> list[tuple[str, list[Tool]]]:
    """The (role, RAC tools) of each agent of ``crew``: its own tools and those of the tasks
    given to it (what its calls are undone through)."""
    by_role: dict[str, list[BaseTool]] = {}
    for agent in crew_members(crew):
        by_role.setdefault(agent.role, []).extend(unwrap(t) for t in agent_tools(agent))
    for task in crew.tasks:
        if task.agent is not None and task.tools:
            by_role.setdefault(task.agent.role, []).extend(unwrap(t) for t in task.tools)
    return [(role, rac_tools(unique_by_name(tools))) for role, tools in by_role.items()]


def guard_crew_now(crew: Crew, engine: RAC) -> list[Tool]:
    """Wrap the tools of ``crew`` for ``engine`` (a crew starting inside an enabled Flow);
    the RAC view of its tools, for the run it joins."""
    return rac_tools(_guard_crew(crew, engine))


@overload
def enable_rac(crew: Crew, rac: RAC | None = None, *, undo_rejected_attempts: bool = True,
               trusted_mcp: Iterable[ServerRef] = (), mcp_timeout: float | None = None,
               mcp_names: Mapping[str, ServerRef] | None = None,
               approver: Approver | None = None, **config: Any) -> Crew: ...
@overload
def enable_rac(crew: Flow[Any], rac: RAC | None = None, *, undo_rejected_attempts: bool = True,
               trusted_mcp: Iterable[ServerRef] = (), mcp_timeout: float | None = None,
               mcp_names: Mapping[str, ServerRef] | None = None,
               approver: Approver | None = None, method_scopes: bool = False,
               **config: Any) -> Flow[Any]: ...


def enable_rac(crew: Crew | Flow[Any], rac: RAC | None = None, *,
               undo_rejected_attempts: bool = True, trusted_mcp: Iterable[ServerRef] = (),
               mcp_timeout: float | None = None, mcp_names: Mapping[str, ServerRef] | None = None,
               approver: Approver | None = None, method_scopes: bool = False,
               **config: Any) -> Crew | Flow[Any]:
    """Run every tool of every agent and task of ``crew`` under RAC; returns ``crew``.

    Given a CrewAI ``Flow``, each kickoff of the Flow is one run and every crew its methods
    kick off joins it, enabled or not (see :mod:`rac_crewai.flows`): a later crew's failure,
    or an exception of a method, undoes what the earlier crews did.

    ``rac`` is a :class:`rac.RAC` engine, or give its keywords instead (``compensations=...``,
    ``alternatives=...``, ``store=...``). Each ``kickoff``/``akickoff`` (and each input of
    ``kickoff_for_each``) is one run in the engine's log, its records carrying the role of the
    agent that made each call; so is each ``kickoff`` of one of its agents used on its own.
    A task with a guardrail runs each attempt in a nested scope: when the guardrail rejects an
    answer and CrewAI runs the task again, what the rejected attempt did is undone first and
    the agent reads the report with CrewAI's validation message
    (``undo_rejected_attempts=False`` leaves rejected attempts' effects in place).
    Kicked off while a run of the engine is open (``with engine.run():`` around a Flow), the
    crew joins that run and adds its tools to it. Calling it again wraps tools added since and
    nothing twice.

    Tools of ``Agent(mcps=[...])`` run under RAC too, with the compensations, lookups and
    effect classes their servers declare in ``_meta`` (read from a listing of each server).
    They are named ``<server>_<tool>``, ``<server>`` being the name ``mcp_names`` gives the
    server (``{"travel": config}``), else the name the server declares for itself (never its
    command line). ``trusted_mcp`` lists the servers (``MCPServerStdio``/``MCPServerHTTP``/
    ``MCPServerSSE`` configs, CrewAI's server names, or names given in ``mcp_names``) whose
    read-only and idempotency claims RAC believes; ``mcp_timeout`` bounds each MCP call,
    in seconds (CrewAI's default: 30). All three apply to every crew of the engine. Tools of
    crewai-tools' ``MCPServerAdapter`` are called through the adapter's own session, so an
    ``isError`` answer is a failure, and their servers' declarations are registered too
    (:mod:`rac_crewai.mcp_adapter`; ``trusted_mcp`` also takes the adapter or its server
    parameters).

    ``approver`` decides the engine's tools declared ``irreversible={tool: "approve"}``: a
    function of a :class:`rac_crewai.Approval` returning True (run it), False (denied) or
    None (pending; the call is refused as waiting for approval); :func:`rac_crewai.ask_in_console`
    asks a person through CrewAI's tool-hook prompt. Given a Flow, ``method_scopes=True``
    makes each method execution a nested scope: a failure inside a method undoes only what
    that method did (see :mod:`rac_crewai.flows`).
    """
    engine = engine_for(rac, config)
    configure(engine, trusted_mcp, mcp_timeout, mcp_names)
    install_approver(engine, approver)
    if isinstance(crew, Flow):
        return enable_flow(crew, engine, method_scopes=method_scopes)
    if method_scopes:
        raise ConfigurationError("method_scopes=True is for a Flow; a crew's kickoff is one "
                                 "run (its guarded tasks' attempts are nested scopes)")
    if not undo_rejected_attempts:
        object.__setattr__(crew, UNDO_ATTR, False)
    _guard_crew(crew, engine)
    if enabled_engine(crew) is engine:
        return crew
    cls = type(crew)

    def prepare() -> tuple[str, list[Tool]]:
        return crew.name or "crew", rac_tools(_guard_crew(crew, engine))

    def copy() -> Crew:
        return number_input(enable_rac(cls.copy(crew), engine,
                                       undo_rejected_attempts=undo_rejected_attempts))

    def run_id() -> str | None:
        return input_run_id(crew)

    object.__setattr__(crew, ENGINE_ATTR, engine)
    def streaming() -> bool:
        return bool(crew.stream)

    def members() -> list[tuple[str, list[Tool]]]:
        return crew_roles(crew)

    def caches() -> list[Any]:
        return caches_of(crew, list(crew_members(crew)))

    object.__setattr__(crew, "kickoff", in_run(engine, cls.kickoff.__get__(crew), prepare,
                                               streaming, run_id=run_id, members=members,
                                               caches=caches))
    object.__setattr__(crew, "akickoff", in_async_run(engine, cls.akickoff.__get__(crew),
                                                      prepare, streaming, run_id=run_id,
                                                      members=members, caches=caches))
    object.__setattr__(crew, "copy", copy)
    for name in ("kickoff_for_each", "kickoff_for_each_async", "akickoff_for_each"):
        method = getattr(cls, name, None)
        if callable(method):
            object.__setattr__(crew, name, numbering_inputs(method.__get__(crew)))
    return crew


def enable_rac_for_agent(agent: Agent, rac: RAC | None = None, *,
                         trusted_mcp: Iterable[ServerRef] = (), mcp_timeout: float | None = None,
                         mcp_names: Mapping[str, ServerRef] | None = None,
                         approver: Approver | None = None, **config: Any) -> Agent:
    """Run every tool of one agent under RAC, its ``mcps`` tools included; returns ``agent``.

    Inside a crew enabled with the same engine the agent's calls join the crew's run. Otherwise
    each task it executes (``execute_task``) and each standalone ``kickoff`` is one run.
    ``trusted_mcp``, ``mcp_timeout``, ``mcp_names`` and ``approver``: see :func:`enable_rac`.
    A ``LiteAgent`` (deprecated by CrewAI) is refused: its kickoff calls the tools it parsed
    when it was made, which RAC cannot wrap; an ``Agent``'s standalone ``kickoff`` is its
    replacement.
    """
    if not isinstance(agent, BaseAgent):
        raise ConfigurationError(
            f"enable_rac_for_agent takes a CrewAI Agent, not a {type(agent).__name__}: "
            "a LiteAgent calls the tools it parsed when it was made, which RAC cannot put "
            "under a run (its calls would be invisible); use Agent(...).kickoff() instead")
    engine = engine_for(rac, config)
    configure(engine, trusted_mcp, mcp_timeout, mcp_names)
    install_approver(engine, approver)
    peers = [unwrap(t) for t in agent_tools(agent)]
    adopt_adapter_tools(engine, peers)
    check_declarations(engine, peers)
    guard_in_place(agent.tools, engine, agent.role, peers)
    _scope_mcp(agent, engine)
    if enabled_engine(agent) is engine:
        return agent
    cls = type(agent)

    def prepare() -> tuple[str, list[Tool]]:
        return agent.role, rac_tools([unwrap(t) for t in agent_tools(agent)])

    object.__setattr__(agent, ENGINE_ATTR, engine)
    def caches() -> list[Any]:
        return caches_of(agent, [])

    object.__setattr__(agent, "execute_task", in_run(engine, cls.execute_task.__get__(agent),
                                                     prepare, caches=caches))
    object.__setattr__(agent, "aexecute_task", in_async_run(
        engine, cls.aexecute_task.__get__(agent), prepare, caches=caches))
    # A standalone kickoff runs its model turns in an executor of its own: noted, so that the
    # calls one turn asks for are one batch, as in a crew.
    _scope_kickoffs(agent, engine, prepare)
    return agent

