"""CrewAI tools as RAC sees them: by name, callable with a dict of arguments.

Compensations and alternatives are called *directly* (not through the model), so RAC needs a
table of the crew's own tools. :func:`as_rac_tool` adapts one CrewAI tool; its parameter names
come from the tool's argument schema so RAC can map compensation arguments by name.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any

from crewai.tools import BaseTool
from crewai.tools.agent_tools.base_agent_tools import BaseAgentTool

import rac
from rac.adapters import ToolCache, framework_tool, params_from_schema
from rac_crewai.errors import real_error
from rac_crewai.mcp_adapter import binding_of

if TYPE_CHECKING:
    from crewai import Crew, Task
    from crewai.agents.agent_builder.base_agent import BaseAgent


def unwrap(tool: BaseTool) -> BaseTool:
    """The user's tool behind a RAC wrapper (or ``tool`` itself)."""
    inner = getattr(tool, "rac_inner", None)
    return inner if isinstance(inner, BaseTool) else tool


def schema_params(tool: BaseTool) -> tuple[list[str] | None, list[str]]:
    """Parameter names of ``tool`` and the required ones, from its argument schema."""
    return params_from_schema(getattr(tool, "args_schema", None))


def run_for_rac(tool: BaseTool, args: dict[str, Any]) -> Any:
    """Call ``tool`` the way CrewAI does (arguments validated by its schema), for one attempt
    RAC makes: a retry, an alternative, a compensation.

    CrewAI counts a use of a tool with ``max_usage_count`` when the model calls it, on the tool
    the agent holds (RAC's wrapper, which keeps the user's budget). RAC's own attempts are not
    uses the model made: they must not spend the budget, or one transient error on a tool used
    once would turn into "usage limit reached" and roll the whole run back. An error CrewAI
    wrapped (an MCP tool's) is raised as the error it carries (:mod:`rac_crewai.errors`). A
    tool of crewai-tools' ``MCPServerAdapter`` is called through its MCP session, so RAC sees
    an ``isError`` answer as the failure it is (:mod:`rac_crewai.mcp_adapter`).
    """
    try:
        binding = binding_of(tool)
        if binding is not None:  # crewai-tools' MCPServerAdapter: RAC reads the MCP answer
            return binding.call(tool._validate_kwargs(args))
        if tool.max_usage_count is None:
            return tool.run(**args)
        result = tool._run(**tool._validate_kwargs(args))
        if asyncio.iscoroutine(result):
            result = asyncio.run(result)
        return result
    except Exception as e:
        real = real_error(e)
        if real is e:
            raise
    raise real  # what CrewAI's wrapper carries is what RAC classifies


def _convert(inner: BaseTool) -> rac.Tool:
    def call(args: dict[str, Any]) -> Any:
        return run_for_rac(inner, args)

    return framework_tool(inner.name, call=call, schema=getattr(inner, "args_schema", None),
                          description=inner.description)


#: Each CrewAI tool object's conversion, least recently used out past the limit.
_CACHE: ToolCache[rac.Tool] = ToolCache(_convert, limit=1024)


def as_rac_tool(tool: BaseTool) -> rac.Tool:
    """A :class:`rac.Tool` that calls the CrewAI tool's ``run`` (validation included)."""
    return _CACHE(unwrap(tool))


def is_coordination(tool: BaseTool) -> bool:
    """True for CrewAI's own delegation and question tools: they move work between agents and
    change nothing in the world, so RAC leaves them alone (the coworkers' tools are guarded)."""
    return isinstance(tool, BaseAgentTool)


def agent_tools(agent: BaseAgent) -> list[BaseTool]:
    """The tools an agent was given, without CrewAI's delegation tools."""
    return [t for t in agent.tools or [] if not is_coordination(t)]


def task_tools(task: Task) -> list[BaseTool]:
    """The tools a task was given."""
    return list(task.tools or [])


def crew_members(crew: Crew) -> Iterator[BaseAgent]:
    """Every agent of the crew, including a user-given manager."""
    yield from crew.agents
    if crew.manager_agent is not None:
        yield crew.manager_agent


def crew_tools(crew: Crew) -> list[BaseTool]:
    """The user's tools of every agent and task of the crew, unwrapped, one per name."""
    found: list[BaseTool] = []
    for agent in crew_members(crew):
        found.extend(agent_tools(agent))
    for task in crew.tasks:
        found.extend(task_tools(task))
    return unique_by_name(unwrap(t) for t in found)


def unique_by_name(tools: Iterable[BaseTool]) -> list[BaseTool]:
    """The first tool of each name, in order."""
    seen: dict[str, BaseTool] = {}
    for t in tools:
        seen.setdefault(t.name, t)
    return list(seen.values())
