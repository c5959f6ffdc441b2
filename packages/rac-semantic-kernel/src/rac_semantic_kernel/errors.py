"""How RAC classifies the failures Semantic Kernel's functions raise.

An MCP plugin's call that times out raises ``mcp.shared.exceptions.McpError`` with code 408
("Timed out while waiting for response"): the request was sent, so the server may have run the
tool. That is ambiguous, not a plain transient failure: repeating it may book twice, and
reporting it as not done may leave a live booking behind. Everything else is left to the
core's classification.
"""

from __future__ import annotations

from rac.classify import Classification, ErrorKind
from rac.hookspecs import hookimpl

#: The name this plugin is registered under on an engine.
PLUGIN_NAME = "rac_semantic_kernel.errors"

_REQUEST_TIMEOUT = 408


class SemanticKernelErrors:
    """Engine plugin: classifies MCP request timeouts as ambiguous."""

    @hookimpl
    def rac_classify_error(self, tool: str, error: BaseException) -> Classification | None:
        if type(error).__name__ == "McpError":
            code = getattr(getattr(error, "error", None), "code", None)
            if code == _REQUEST_TIMEOUT:
                return Classification(ErrorKind.AMBIGUOUS, None,
                                      "MCP request timed out; the server may have run it")
        return None
