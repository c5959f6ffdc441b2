"""Compensation pairs, effect classes and recovery declarations from MCP servers.

An MCP server declares how to undo its tools in their ``_meta`` (key
:data:`META_KEY`, built with :func:`recovery_meta`); RAC also reads the recovery annotation of
the MCP proposal SEP-3172 and the reference implementation's ``x-compensation-pair``. RAC
reads them from whatever carries the tools (:mod:`rac.mcp.reading`): the SDK's ``Tool``
objects of mcp 1.x and 2.x, their dicts, the LangChain tools of langchain-mcp-adapters, or a
session it lists itself (:func:`declarations_from_session`). Declarations are validated when
they are registered: a malformed one, or one naming a tool the server does not list, raises
:class:`rac.ConfigurationError` naming the server, the tool and the field.

What a server says about itself is believed only as far as the user says (``trusted``, see
:mod:`rac.mcp.trust`): from an untrusted server a declaration can only make RAC more careful.
MCP errors and ``isError`` results are classified by :class:`MCPErrors`
(:mod:`rac.mcp.errors`).

Nothing here imports ``mcp`` or a framework.
"""

from __future__ import annotations

from rac.mcp.declarations import (
    EFFECTS,
    LEGACY_META_KEY,
    META_KEY,
    REFERENCE_ANNOTATION,
    SEP_3172_ANNOTATION,
    ToolDeclaration,
)
from rac.mcp.errors import MCPErrors, call_tool_result_value, classify_mcp_error, structured_value
from rac.mcp.names import NameMap
from rac.mcp.reading import MCPToolView, read_tool
from rac.mcp.registration import (
    MCPDeclarations,
    MCPTool,
    declarations_from_mcp,
    register_mcp_tools,
    register_offered_tools,
    state_of,
)
from rac.mcp.server import recovery_meta
from rac.mcp.sessions import (
    call_session_tool,
    declarations_from_session,
    list_session_tools,
    register_session_tools,
    session_tools,
)
from rac.mcp.trust import TrustVerdict, judge

__all__ = [
    "EFFECTS",
    "LEGACY_META_KEY",
    "META_KEY",
    "REFERENCE_ANNOTATION",
    "SEP_3172_ANNOTATION",
    "MCPDeclarations",
    "MCPErrors",
    "MCPTool",
    "MCPToolView",
    "NameMap",
    "ToolDeclaration",
    "TrustVerdict",
    "call_session_tool",
    "call_tool_result_value",
    "classify_mcp_error",
    "declarations_from_mcp",
    "declarations_from_session",
    "judge",
    "list_session_tools",
    "read_tool",
    "recovery_meta",
    "register_mcp_tools",
    "register_offered_tools",
    "register_session_tools",
    "session_tools",
    "state_of",
    "structured_value",
]
