"""The wrapper that puts one CrewAI tool under RAC, keeping its name, description and schema."""

from __future__ import annotations

from typing import Any

from crewai.tools import BaseTool
from pydantic import PrivateAttr

import rac
from rac.adapters import execute, open_or_join, route
from rac_crewai.attempts import escalate
from rac_crewai.caches import cacheable_now, note_read
from rac_crewai.caller import current_caller, current_group, current_turn
from rac_crewai.results import failure_for_agent
from rac_crewai.tool_table import as_rac_tool, run_for_rac, unwrap


def _never_cache(args: Any = None, result: Any = None) -> bool:
    """Cache predicate of side-effecting tools: a cached booking would be replayed after the
    rollback that cancelled it."""
    return False


def _cache_read(args: Any = None, result: Any = None) -> bool:
    """Cache predicate of read-only tools: what the call this thread just made decided (its
    tool's own predicate, and no rollback began while it ran; :mod:`rac_crewai.caches`). A
    module-level function, which CrewAI can serialize."""
    return cacheable_now()


class RACTool(BaseTool):
    """A CrewAI tool whose every call runs under RAC.

    CrewAI sees the user's tool unchanged (same name, description, argument and result schema,
    output formatting, usage limit, ``result_as_answer`` and ``tool_failure_policy``). Each call
    joins the RAC run of the crew's current kickoff; RAC calls the inner tool (again, for
    retries), its alternatives and compensators directly and sees their raw exceptions. When the
    call cannot be completed the tool returns a ``ToolFailure`` carrying the recovery report.
    Side-effecting tools are never served from CrewAI's tool cache.
    """

    _inner: BaseTool = PrivateAttr()
    _engine: rac.RAC = PrivateAttr()
    _agent_id: str | None = PrivateAttr(default=None)
    _peers: list[BaseTool] = PrivateAttr(default_factory=list)

    def __init__(self, inner: BaseTool, engine: rac.RAC, *, agent_id: str | None = None,
                 peers: list[BaseTool] | None = None) -> None:
        inner = unwrap(inner)
        read_only = inner.name in engine.registry.read_only
        super().__init__(
            name=inner.name, description=inner.description, args_schema=inner.args_schema,
            result_schema=inner.result_schema, env_vars=inner.env_vars,
            result_as_answer=inner.result_as_answer, max_usage_count=inner.max_usage_count,
            current_usage_count=inner.current_usage_count,
            tool_failure_policy=inner.tool_failure_policy,
            cache_function=_cache_read if read_only else _never_cache)
        self._inner = inner
        self._engine = engine
        self._agent_id = agent_id
        self._peers = list(peers or [])

    @property
    def rac_inner(self) -> BaseTool:
        """The user's tool."""
        return self._inner

    @property
    def rac_engine(self) -> rac.RAC:
        """The engine this tool's calls run under."""
        return self._engine

    def format_output_for_agent(self, raw_result: Any) -> str:
        """Format results exactly as the user's tool does."""
        return self._inner.format_output_for_agent(raw_result)

    def _run(self, *args: Any, **kwargs: Any) -> Any:
        if args:
            raise TypeError(f"{self.name} takes keyword arguments only under RAC")
        # Called outside a kickoff RAC scoped, the call is a run of its own. Inside one, the
        # kickoff offered each agent's tools as that agent's already (run_scope.join_members:
        # the id its calls are recorded with), once per kickoff rather than once per call.
        with open_or_join(self._engine, agent_id=self._agent_id,
                          tools=[as_rac_tool(t) for t in self._peers]
                          if self._engine.current_run() is None else None) as run:
            started_at = run.rollbacks_started
            note_read(False)
            result = self._call(run, kwargs)
            # read by the cache predicate, right after, in this thread
            note_read(run.rollbacks_started == started_at and self._may_cache(kwargs, result))
            return result

    def _may_cache(self, args: dict[str, Any], result: Any) -> bool:
        try:
            return bool(self._inner.cache_function(args, result))
        except Exception:
            return False  # a predicate that fails caches nothing

    def _call(self, run: rac.Run, args: dict[str, Any]) -> Any:
        inner = self._inner
        agent_id = current_caller() or self._agent_id
        invoke = route(run, inner.name, lambda a: run_for_rac(inner, a), agent_id=agent_id,
                       hint="give it to an agent of the crew or to the engine's tools=[...]")
        # The calls of one model turn are one batch: once a rollback begins, a sibling that has
        # not started is refused and one still running is undone when it returns. A coworker's
        # calls for a manager's delegation are in the batch of the manager's turn, an async
        # task's in the task's (rac_crewai.caller.Group).
        turn, group = current_turn(), current_group()
        batch = group.batch(turn) if group is not None else turn
        outcome = execute(run, self.name, args, invoke, agent_id=agent_id, batch=batch)
        if outcome.ok:
            return outcome.result
        if group is not None and outcome.report is not None:
            group.heard(turn)
        return failure_for_agent(outcome, run, escalate(run, outcome))
