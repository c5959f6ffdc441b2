"""RAC for LangGraph graphs and LangChain agents.

- :class:`RACMiddleware` turns RAC on for ``langchain.agents.create_agent`` agents.
- :func:`tool_node` (or :class:`RACToolCalls` passed to ``ToolNode(wrap_tool_call=...,
  awrap_tool_call=...)``) does it for hand-built ``StateGraph`` s and multi-agent graphs.
- :func:`as_rac_tool` makes a LangChain tool callable by the engine (compensators the model is
  not offered).
- :func:`tool_cache_policy` is the ``CachePolicy`` of a tool node LangGraph caches: no entry
  outlives a rollback.
"""

try:  # first: an adapter on a core it was not built for fails here, in one line
    from rac.adapters.compat import require_core
except ImportError as e:  # no RAC core at all, or another project's `rac` module
    raise ImportError(f"rac_langgraph needs RAC's core, robust-agent-compensation: {e}") from None

require_core("robust-agent-compensation-langgraph")

from rac_langgraph.cache import tool_cache_policy
from rac_langgraph.calls import RACToolCalls
from rac_langgraph.middleware import RACMiddleware
from rac_langgraph.nodes import tool_node
from rac_langgraph.results import InvalidToolCall
from rac_langgraph.tools import as_rac_tool, as_rac_tools

__all__ = ["InvalidToolCall", "RACMiddleware", "RACToolCalls", "as_rac_tool", "as_rac_tools",
           "tool_cache_policy", "tool_node"]
__version__ = "0.1.0"
