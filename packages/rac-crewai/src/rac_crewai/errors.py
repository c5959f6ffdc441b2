"""What CrewAI's own errors mean to RAC.

CrewAI wraps what happened in errors of its own before a tool's caller sees it:
``MCPNativeTool`` raises ``RuntimeError("Error executing MCP tool ...")`` from the real error
(a timeout, the connection closing with the request outstanding, an MCP error code). Classified
as they stand, the wrapper would make every MCP failure permanent: a call whose answer was lost
would be reported as not done. RAC reads the error the wrapper carries instead, so the core's
classification (and :class:`rac.mcp.MCPErrors`) decides: a timeout or a lost connection is
ambiguous (the call may have happened), an invalid-params answer is permanent.
"""

from __future__ import annotations

#: How ``MCPNativeTool._run`` begins the message of the error it wraps another in.
MCP_WRAPPER_PREFIX = "Error executing MCP tool "


def real_error(error: BaseException) -> BaseException:
    """The error CrewAI's wrappers around ``error`` carry (``error`` itself if none)."""
    seen = 0
    while (type(error) is RuntimeError and error.__cause__ is not None and seen < 8
           and str(error).startswith(MCP_WRAPPER_PREFIX)):
        error = error.__cause__
        seen += 1
    return error
