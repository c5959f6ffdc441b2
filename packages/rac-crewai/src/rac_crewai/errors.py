"""What CrewAI's own errors mean to RAC.

CrewAI wraps what happened in errors of its own before a tool's caller sees it:
``MCPNativeTool`` raises ``RuntimeError("Error executing MCP tool ...")`` from the real error
(a timeout, the connection closing with the request outstanding, an MCP error code). Classified
as they stand, the wrapper would make every MCP failure permanent: a call whose answer was lost
would be reported as not done. RAC reads the error the wrapper carries instead, so the core's
classification (and :class:`rac.mcp.MCPErrors`) decides: a timeout or a lost connection is
ambiguous (the call may have happened), an invalid-params answer is permanent. The same holds
for an exception group holding one error (:func:`real_error`).
"""

from __future__ import annotations

#: How ``MCPNativeTool._run`` begins the message of the error it wraps another in.
MCP_WRAPPER_PREFIX = "Error executing MCP tool "


def _leaves(group: BaseExceptionGroup[BaseException]) -> list[BaseException]:
    out: list[BaseException] = []
    for e in group.exceptions:
        out.extend(_leaves(e) if isinstance(e, BaseExceptionGroup) else [e])
    return out


def real_error(error: BaseException) -> BaseException:
    """The error CrewAI's wrappers around ``error`` carry (``error`` itself if none), and the
    one error an exception group holds.

    anyio's task groups (the MCP client's, a tool's own) raise an ``ExceptionGroup`` around the
    error that stopped them: classified as it stands, "unhandled errors in a TaskGroup (1
    sub-exception)" is an unknown error, reported as such to the agent and the log, and a
    connection refused before anything happened would read as a call that may have happened.
    A group whose leaves are one error is read as that error. A group of several errors stays
    a group (none of them is *the* cause), and is classified as the unknown error it is."""
    seen = 0
    while seen < 8:
        seen += 1
        if (type(error) is RuntimeError and error.__cause__ is not None
                and str(error).startswith(MCP_WRAPPER_PREFIX)):
            error = error.__cause__
            continue
        if isinstance(error, BaseExceptionGroup):
            leaves = _leaves(error)
            if len(leaves) == 1 and isinstance(leaves[0], Exception):
                error = leaves[0]
                continue
        break
    return error


#: anyio's errors of a stream whose other end went away: they carry no message of their own.
#: Which one a client meets when an MCP server exits depends on timing (writing to its closed
#: stdin, or reading its stdout's end), so both are named for what they mean.
_CLOSED_STREAM = {"BrokenResourceError": "the server closed the connection",
                  "ClosedResourceError": "the connection was already closed",
                  "EndOfStream": "the server closed the connection"}


def describe(error: BaseException) -> str:
    """``error`` as a report names a cause: its class and its message, or for anyio's
    message-less closed-stream errors what they mean (``BrokenResourceError: the server closed
    the connection``)."""
    name = type(error).__name__
    text = str(error) or _CLOSED_STREAM.get(name, "no message")
    return f"{name}: {text}"
