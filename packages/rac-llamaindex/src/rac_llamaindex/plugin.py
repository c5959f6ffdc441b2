"""The RAC plugin that teaches an engine LlamaIndex's types.

* A tool call's :class:`~llama_index.core.tools.ToolOutput` is read as its raw value (see
  :mod:`rac_llamaindex.results`); an output flagged ``is_error`` counts as a failed attempt.
* A LlamaIndex tool given to the engine itself (``rac.RAC(tools=[...])``, ``register_tools``:
  compensators the model is not offered) becomes a :class:`rac.Tool` calling it.
"""

from __future__ import annotations

from typing import Any

from llama_index.core.tools import ToolOutput
from llama_index.core.tools.types import BaseTool

import rac
from rac_llamaindex.results import output_value
from rac_llamaindex.tool_table import as_rac_tool

#: The name under which :class:`LlamaIndexPlugin` is registered on an engine.
PLUGIN_NAME = "rac_llamaindex"


class LlamaIndexPlugin:
    """RAC hooks for LlamaIndex results and tools (registered by ``enable_rac``; pass it in
    ``rac.RAC(plugins=[...])`` to give the engine LlamaIndex tools at construction)."""

    @rac.hookimpl
    def rac_normalize_result(self, tool: str, result: Any) -> Any:
        """A tool output's raw value; defer on anything else."""
        return output_value(result) if isinstance(result, ToolOutput) else None

    @rac.hookimpl
    def rac_adapt_tool(self, tool: Any) -> rac.Tool | None:
        """A LlamaIndex tool as a RAC tool; defer on anything else."""
        return as_rac_tool(tool) if isinstance(tool, BaseTool) else None
