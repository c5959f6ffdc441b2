"""A call plan: what RAC decides about a tool once rather than at every call (its effect
class, its compensation, the fields its undo may read, whether its intent needs a read of the
world first), kept per engine for as long as what it was decided from stays as it was: the
declarations (:attr:`rac.registry.CompensationRegistry.version`), the plugins
(:attr:`rac.dispatch.Hooks.generation`) and the tool and compensator the run resolves.

Only the plainest decisions are planned: a tool that is read-only, or whose compensation the
default plugin resolves from the registry, and that is not irreversible. Anything else (a
plugin resolving compensations, which may read the call's arguments; an irreversible tool,
which may ask for approval; a tool with no compensation, whose policy may warn at each call)
has no plan, and :func:`rac.run.calls.plan_intent` decides it at every call, as it always did.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rac.registry import Effect
from rac.run.reconcile import needs_snapshot
from rac.run.values import Needed, needed_fields

if TYPE_CHECKING:
    from rac.registry import Compensation
    from rac.run.run import Run
    from rac.tools import Tool

#: How many (tool, agent) plans an engine keeps.
PLAN_MEMORY = 4096


class CallPlan:
    """What is decided about calls of one tool by one agent (see the module docstring)."""

    __slots__ = ("comp", "comp_tool", "effect", "effect_name", "hooks", "key_param", "keyed",
                 "needed", "params", "reads_first", "read_only", "tool", "version")

    def __init__(self, *, tool: Tool | None, comp_tool: Tool | None, version: int, hooks: int,
                 key_param: str, effect: Effect, comp: Compensation | None,
                 needed: Needed | None, reads_first: bool) -> None:
        self.tool, self.comp_tool = tool, comp_tool
        self.params = tool.params if tool is not None else None
        self.version, self.hooks, self.key_param = version, hooks, key_param
        self.effect, self.effect_name = effect, str(effect)
        self.read_only = effect is Effect.READ_ONLY
        self.keyed = effect is Effect.KEYED
        self.comp, self.needed, self.reads_first = comp, needed, reads_first


def call_plan(run: Run, tool: str, agent: str) -> CallPlan | None:
    """The plan of a call of ``tool`` by ``agent`` in ``run``, or None when its decisions are
    made call by call (see the module docstring)."""
    engine = run.engine
    plans = engine.plans
    plan = plans.get((tool, agent))
    t = run.tool(tool, agent)
    if plan is not None and plan.version == engine.registry.version \
            and plan.hooks == engine.hooks.generation and plan.tool is t \
            and (t is None or plan.params is t.params) and plan.key_param is engine.key_param:
        comp = plan.comp
        if comp is None or run.tool(comp.tool, agent) is plan.comp_tool:
            return plan
    plan = _plan(run, tool, agent, t)
    if plan is not None:
        if len(plans) >= PLAN_MEMORY:
            plans.clear()
        plans[(tool, agent)] = plan
    return plan


def _plan(run: Run, tool: str, agent: str, t: Tool | None) -> CallPlan | None:
    engine = run.engine
    registry = engine.registry
    hooks = engine.hooks
    if not hooks.registry_compensations or tool in registry.irreversible:
        return None
    version, generation = registry.version, hooks.generation
    effect = registry.effect_of(tool, t.params if t is not None else None, engine.key_param)
    if effect is Effect.READ_ONLY:
        return CallPlan(tool=t, comp_tool=None, version=version, hooks=generation,
                        key_param=engine.key_param, effect=effect, comp=None, needed=None,
                        reads_first=False)
    comp = registry.pairs.get(tool)
    if comp is None:
        return None
    comp_tool = run.tool(comp.tool, agent)
    lookup = registry.lookups.get(tool)
    return CallPlan(tool=t, comp_tool=comp_tool, version=version, hooks=generation,
                    key_param=engine.key_param, effect=effect, comp=comp,
                    needed=needed_fields(comp, comp_tool.params if comp_tool else None),
                    reads_first=comp.before is not None or (
                        lookup is not None and needs_snapshot(lookup)))


__all__ = ["PLAN_MEMORY", "CallPlan", "call_plan"]
