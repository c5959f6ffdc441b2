"""Tools an agent retrieves per step (``tool_retriever``), put under RAC as they come.

An agent adds what its ``tool_retriever`` returns to its own tools at every step. The enabled
agent's retriever is replaced by :class:`GuardedRetriever`, which asks the user's retriever and
wraps each tool it returns (once per tool object: the same tool comes back as the same
wrapper), so a retrieved tool's calls are logged, retried and compensated like the agent's own.
The tools retrieved together, with the agent's own, are offered to the current run, so a
retrieved tool's compensator may be another retrieved tool.
"""

from __future__ import annotations

from typing import Any

from llama_index.core.objects.base import ObjectRetriever
from llama_index.core.tools.types import BaseTool

import rac
from rac.adapters import ToolCache, ToolSetCache
from rac_llamaindex.guarded_tool import RACFunctionTool
from rac_llamaindex.tool_table import unwrap


class GuardedRetriever(ObjectRetriever[Any]):
    """The user's tool retriever, its tools wrapped for RAC (anything that is not a tool is
    passed on as it is)."""

    def __init__(self, inner: ObjectRetriever[Any], engine: rac.RAC, agent_id: str,
                 own_tools: list[BaseTool]) -> None:
        # Not ObjectRetriever.__init__: the inner retriever keeps its own parts.
        self.rac_inner = inner
        self._engine = engine
        self._agent_id = agent_id
        self._own_tools = list(own_tools)
        self._sets = ToolSetCache(engine, lambda t: engine.adapt_tool(unwrap(t)))
        self._offered: rac.ToolSet = self._sets.tool_set(self._own_tools)
        self._wrappers: ToolCache[RACFunctionTool] = ToolCache(self._wrap)

    def __getattr__(self, name: str) -> Any:  # retriever, object_node_mapping, ...
        return getattr(self.rac_inner, name)

    def _wrap(self, tool: BaseTool) -> RACFunctionTool:
        return RACFunctionTool(tool, self._engine, agent_id=self._agent_id,
                               peers=self._offered)

    def _guard(self, found: list[Any]) -> list[Any]:
        retrieved = [unwrap(t) for t in found if isinstance(t, BaseTool)]
        if retrieved:
            self._offered = self._sets.tool_set([*self._own_tools, *retrieved])
            run = self._engine.current_run()
            if run is not None:
                run.add_tools(self._offered, agent_id=self._agent_id)
        return [obj if not isinstance(obj, BaseTool) or (
                    isinstance(obj, RACFunctionTool) and obj.rac_engine is self._engine)
                else self._wrappers(obj) for obj in found]

    def retrieve(self, str_or_query_bundle: Any) -> list[Any]:
        """The inner retriever's tools, guarded."""
        return self._guard(self.rac_inner.retrieve(str_or_query_bundle))

    async def aretrieve(self, str_or_query_bundle: Any) -> list[Any]:
        """The inner retriever's tools, guarded (what agents call)."""
        return self._guard(await self.rac_inner.aretrieve(str_or_query_bundle))
