"""Turning RAC on for a LlamaIndex agent or agent workflow in one call."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, TypeVar

from llama_index.core.agent.workflow import AgentWorkflow, BaseWorkflowAgent, CodeActAgent
from llama_index.core.agent.workflow.codeact_agent import EXECUTE_TOOL_NAME
from llama_index.core.tools.types import BaseTool
from llama_index.core.workflow import Workflow

import rac
from rac import RAC, ToolSet
from rac_llamaindex.engine_setup import engine_for
from rac_llamaindex.guarded_tool import RACFunctionTool
from rac_llamaindex.retriever import GuardedRetriever
from rac_llamaindex.run_scope import scoped_run
from rac_llamaindex.tool_table import tool_name, unique_by_name, unwrap
from rac_llamaindex.turns import counting_steps

Target = TypeVar("Target", BaseWorkflowAgent, AgentWorkflow)

#: Instance attribute holding the engine of an enabled agent or workflow.
ENGINE_ATTR = "_rac_llamaindex_engine"
#: Instance attribute holding the engine an agent's tools were last wrapped for.
TOOLS_ENGINE_ATTR = "_rac_llamaindex_tools_engine"
#: Instance attribute holding the names of an agent's delegating tools.
DELEGATES_ATTR = "_rac_llamaindex_delegates"


def enabled_engine(target: BaseWorkflowAgent | AgentWorkflow) -> rac.RAC | None:
    """The engine RAC was enabled with on this agent or workflow, if any."""
    engine = target.__dict__.get(ENGINE_ATTR)
    return engine if isinstance(engine, rac.RAC) else None


def agents_of(target: Any) -> list[BaseWorkflowAgent]:
    """The agents whose tools RAC guards for ``target``; an error naming the type otherwise."""
    if isinstance(target, AgentWorkflow):
        return list(target.agents.values())
    if isinstance(target, BaseWorkflowAgent):
        return [target]
    hint = (" (for a Workflow of several agents, enable each agent and open one run around "
            "the workflow with `async with engine.run(): await workflow.run(...)`)"
            if isinstance(target, Workflow) else "")
    raise rac.ConfigurationError(
        "enable_rac takes a LlamaIndex FunctionAgent, ReActAgent, CodeActAgent (any "
        f"BaseWorkflowAgent) or an AgentWorkflow, got {type(target).__name__}{hint}")


def user_tools(agents: Iterable[BaseWorkflowAgent]) -> list[BaseTool]:
    """The user's tools of every agent, unwrapped, one per name."""
    return unique_by_name(unwrap(t) for a in agents for t in a.tools or ()
                          if isinstance(t, BaseTool))


def check_declarations(engine: rac.RAC, tools: list[BaseTool]) -> None:
    """Fail now if a compensator or alternative of one of ``tools`` is neither among them nor
    registered with the engine."""
    names = [tool_name(t) for t in tools]
    engine.registry.check_known(set(names) | set(engine.tools), only_for=names)


def count_steps(agent: BaseWorkflowAgent) -> None:
    """Make the agent count its model steps per run (once), so the calls of one step are one
    parallel batch (see :mod:`rac_llamaindex.turns`)."""
    if "take_step" in agent.__dict__:
        return

    def engine_now() -> rac.RAC:
        found = agent.__dict__.get(TOOLS_ENGINE_ATTR)
        assert isinstance(found, rac.RAC)
        return found

    object.__setattr__(agent, "take_step", counting_steps(
        type(agent).take_step.__get__(agent), engine_now, agent.name))


def delegates_of(agent: BaseWorkflowAgent, named: Iterable[str]) -> frozenset[str]:
    """The agent's delegating tools: ``named`` (and those named when it was enabled before),
    and a ``CodeActAgent``'s code execution (the functions its code calls are the calls)."""
    found = frozenset(agent.__dict__.get(DELEGATES_ATTR, ())) | frozenset(named)
    if isinstance(agent, CodeActAgent):
        found |= {EXECUTE_TOOL_NAME}
    object.__setattr__(agent, DELEGATES_ATTR, found)
    return found


def guard_agent(agent: BaseWorkflowAgent, engine: rac.RAC, peers: rac.ToolSet,
                delegates: frozenset[str] = frozenset()) -> None:
    """Wrap the agent's tools in place, each exactly once for ``engine``; ``peers`` are the
    agent's own tools, which RAC calls to undo (or stand in for) the agent's calls;
    ``delegates`` name the delegating tools (not logged, see
    :mod:`rac.adapters.delegation`)."""
    object.__setattr__(agent, TOOLS_ENGINE_ATTR, engine)
    count_steps(agent)
    retriever = agent.tool_retriever
    if retriever is not None:
        inner = retriever.rac_inner if isinstance(retriever, GuardedRetriever) else retriever
        own = [unwrap(t) for t in agent.tools or () if isinstance(t, BaseTool)]
        object.__setattr__(agent, "tool_retriever",
                           GuardedRetriever(inner, engine, agent.name, own))
    tools = agent.tools
    if not tools:
        return
    guarded: list[BaseTool] = []
    for t in tools:
        if not isinstance(t, BaseTool):  # the agent turns functions into tools when it is made
            raise rac.ConfigurationError(
                f"agent {agent.name!r} holds {type(t).__name__} {t!r}, not a LlamaIndex tool")
        delegating = tool_name(t) in delegates
        if isinstance(t, RACFunctionTool) and t.rac_engine is engine \
                and t.rac_agent_id == agent.name and t.rac_delegating == delegating:
            t.offer(peers)  # the agent's tools now (enabled again: some may be new)
            guarded.append(t)
        else:
            guarded.append(RACFunctionTool(t, engine, agent_id=agent.name, peers=peers,
                                           delegating=delegating))
    tools[:] = guarded


def enable_rac(target: Target, rac: RAC | None = None, *, delegates: Iterable[str] = (),
               **config: Any) -> Target:
    """Run every tool call of ``target`` under RAC; returns ``target``.

    ``target`` is a ``FunctionAgent``, ``ReActAgent``, ``CodeActAgent`` (any
    ``BaseWorkflowAgent``) or an ``AgentWorkflow`` (every agent in it). ``rac`` is a
    :class:`rac.RAC` engine to share, or give its keywords instead (``compensations=...``,
    ``alternatives=...``, ``store=...``, ``tools=[...]`` for compensators the model is not
    offered). Tools keep their names, schemas, ``return_direct`` and ``Context`` parameters;
    hand-off tools are left alone.

    ``delegates`` names tools that hand work to another agent (an agent used as a tool: a
    function awaiting ``other_agent.run(...)``; enable that agent too). Such a call is not
    logged as a side effect of its own: the other agent's calls join this run, a later
    failure undoes them, and when one of them fails for good the delegating tool's output
    carries RAC's report, so this agent's model hears what was undone. A ``CodeActAgent``'s
    code execution is always delegating: give its executor the functions of
    :func:`rac_llamaindex.code_functions` so the calls its code makes are logged.

    Each ``target.run(...)`` (one workflow handler) is one run in the engine's log, with each
    call recorded under the name of the agent that made it; inside an open run of the engine
    (``async with engine.run()``) the calls join that run instead. When a call fails for good,
    RAC undoes the run's completed effects and the model receives the recovery report as the
    tool's output (``is_error=True``); the agent goes on, so the model can replan.

    Raises :class:`rac.ConfigurationError` for a target RAC does not support, for both ``rac``
    and keywords, and for a compensation or alternative naming a tool neither the target nor
    the engine has. Enabling again wraps tools added since, and nothing twice.
    """
    engine = engine_for(rac, config)
    agents = agents_of(target)
    check_declarations(engine, user_tools(agents))
    # Each agent's tools are its own: two agents may each have a tool of one name (two
    # systems), and a call is undone through the tool of the agent that made it.
    offered: dict[str, ToolSet] = {}
    for agent in agents:
        peers = engine.tool_set(user_tools([agent]))
        offered[agent.name] = peers
        guard_agent(agent, engine, peers, delegates_of(agent, delegates))
    first_time = enabled_engine(target) is None
    object.__setattr__(target, ENGINE_ATTR, engine)
    object.__setattr__(target, "_rac_llamaindex_tools", offered)
    if first_time:
        name = target.name if isinstance(target, BaseWorkflowAgent) \
            else (target.root_agent or type(target).__name__)

        def engine_now() -> RAC:
            found = enabled_engine(target)
            assert found is not None
            return found

        def tools_now() -> dict[str, ToolSet]:
            tool_sets: dict[str, ToolSet] = target.__dict__["_rac_llamaindex_tools"]
            return tool_sets

        object.__setattr__(target, "run", scoped_run(type(target).run.__get__(target),
                                                     engine_now, lambda: name, tools_now))
    return target
