"""What a LangGraph tool call returned, read as the plain value RAC logs, maps and inspects."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from langchain_core.messages import ToolMessage
from langchain_core.tools import ToolException
from langgraph.prebuilt.tool_node import TOOL_INVOCATION_ERROR_TEMPLATE
from langgraph.types import Command

import rac
import rac.mcp
from rac.adapters import CallRefused
from rac.classify import Classification, default_classify
from rac.serialize import as_fields
from rac_langgraph import approvals, cache

#: The name the results plugin is registered under in an engine's plugin manager.
PLUGIN_NAME = "rac_langgraph.results"
_INVALID_CALL_PREFIX = TOOL_INVOCATION_ERROR_TEMPLATE.split("{tool_kwargs}")[0]


class InvalidToolCall(CallRefused):
    """The framework refused the model's call before the tool ran (bad arguments).

    Declared a pass-through: RAC logs the call as not run and does not roll anything back; the
    model gets the framework's "fix the arguments" message (``message``).
    """

    def __init__(self, message: ToolMessage) -> None:
        super().__init__(message, str(message.content))
        self.message = message


class HandOff(CallRefused):
    """A tool handed the conversation to another agent (it returned
    ``Command(goto=..., graph=Command.PARENT)``, as the hand-off tools of langgraph-swarm and
    langgraph-supervisor do): control flow, not a side effect, so it is never compensated.

    Declared a pass-through: the call is logged as control flow, and the command goes on to
    the graph (``command``).
    """

    def __init__(self, command: Command[Any]) -> None:
        super().__init__(command, f"hand-off to {command.goto!r}")
        self.command = command


def is_handoff(result: Any) -> bool:
    """True if ``result`` is a command for the parent graph (a hand-off)."""
    return isinstance(result, Command) and result.graph == Command.PARENT


def is_invalid_call(message: ToolMessage, tool_name: str) -> bool:
    """True if ``message`` is ToolNode's answer to arguments that failed validation."""
    return (message.status == "error" and isinstance(message.content, str)
            and message.content.startswith(_INVALID_CALL_PREFIX.format(tool_name=tool_name)))


def _content_value(content: Any) -> Any:
    if isinstance(content, list):
        texts = [b.get("text") if isinstance(b, Mapping) else b for b in content]
        if all(isinstance(t, str) for t in texts):
            return as_fields("".join(str(t) for t in texts))  # text blocks: one text
        return content
    return as_fields(content)


def message_value(message: ToolMessage) -> Any:
    """The plain value of a tool message: a structured artifact if the tool returned one, else
    its content (JSON parsed, text blocks joined). An error message becomes ``{"error": text}``
    so RAC's structured error detection flags it."""
    if message.status == "error":
        content = message.content
        return {"error": content if isinstance(content, str) else str(_content_value(content))}
    artifact = message.artifact
    if artifact is not None and isinstance(artifact, Mapping):
        if set(artifact) == {"structured_content"}:  # langchain-mcp-adapters' MCP result
            return rac.mcp.structured_value(artifact["structured_content"])
        return artifact
    content = message.content
    if type(content) is str:
        return as_fields(content)
    return _content_value(content)


def command_value(command: Command[Any], tool_call_id: str | None = None) -> Any:
    """The plain value of a ``Command`` a tool returned: the value of its tool message that
    answers ``tool_call_id`` (other messages of the update are history), else a summary of
    where it goes and what it updates."""
    update = command.update
    messages = update.get("messages") if isinstance(update, Mapping) else None
    if isinstance(messages, Sequence) and not isinstance(messages, str):
        answers = [m for m in messages if isinstance(m, ToolMessage)]
        if tool_call_id is not None:
            answers = [m for m in answers if m.tool_call_id == tool_call_id]
        if len(answers) == 1:
            return message_value(answers[0])
    keys = sorted(update) if isinstance(update, Mapping) else []
    return {"command": {"goto": str(command.goto) if command.goto else None, "update": keys}}


def result_value(result: Any, tool_call_id: str | None = None) -> Any:
    """The plain value of anything a ToolNode returns for one call (message, command, list);
    None for anything else."""
    if type(result) is ToolMessage:
        # The common case first: a tool message with text content (often JSON), no artifact.
        if result.status != "error" and result.artifact is None \
                and type(result.content) is str:
            return as_fields(result.content)
        return message_value(result)
    if isinstance(result, ToolMessage):
        return message_value(result)
    if isinstance(result, Command):
        return command_value(result, tool_call_id)
    if isinstance(result, list) and result and all(
            isinstance(r, ToolMessage | Command) for r in result):
        return result_value(result[0], tool_call_id)
    return None


#: How many links of an exception's cause chain a wrapped error is looked for in.
_CHAIN_LIMIT = 8


def wrapped_error(error: BaseException) -> BaseException | None:
    """The error a LangChain ``ToolException`` was raised from (``raise ToolException(...)
    from e``, or raised while handling ``e``): the first link of its cause chain that is not
    itself a ``ToolException``; None if it wraps nothing."""
    seen = 0
    current: BaseException | None = error
    while current is not None and seen < _CHAIN_LIMIT:
        nxt = current.__cause__ or (None if current.__suppress_context__
                                    else current.__context__)
        if nxt is None or not isinstance(nxt, ToolException):
            return nxt
        current, seen = nxt, seen + 1
    return None


def classify_tool_exception(error: BaseException) -> Classification | None:
    """What a ``ToolException`` around another error means: the wrapped error's verdict when
    RAC's rules know it (a ``ToolException`` raised from a ``TimeoutError`` or an
    ``httpx.ReadTimeout`` may have taken effect: ambiguous; one from a refused connection is
    transient), else None (the default rules read the ``ToolException`` itself). The verdict
    is the wrapped error's whole: its kind and retry delay, and what it rests on, so an
    answer a repeat would only get again (``final``: an HTTP 4xx) is not repeated, and a
    permanent verdict resting only on a declaration that the error came before any effect
    (``declared``: an error result declared so) is still worth another try of an undo."""
    if not isinstance(error, ToolException):
        return None
    inner = wrapped_error(error)
    if inner is None:
        return None
    verdict = default_classify(inner)
    if verdict.fallback:
        return None
    return replace(verdict, reason=f"ToolException around {verdict.reason}")


class LangGraphResults:
    """RAC plugin: says what LangChain's ``ToolException`` around another error means
    (``rac_classify_error``), gives the verdict a person gave through ``interrupt()`` on
    an irreversible call (``rac_approve_action``, see :mod:`rac_langgraph.approvals`), and
    makes LangGraph's cached tool results stale at every rollback (``rac_rollback_started``,
    see :mod:`rac_langgraph.cache`).

    It does not implement ``rac_normalize_result``: the adapter hands RAC the plain value of
    each ``ToolMessage`` or ``Command`` itself (:func:`result_value`), and LangChain tools the
    engine calls (:func:`rac_langgraph.as_rac_tool`) return plain values, so an engine with no
    other plugin keeps the core's shortcut for the plainest calls (``rac.run.fast``)."""

    @rac.hookimpl
    def rac_classify_error(self, error: BaseException) -> Classification | None:
        return classify_tool_exception(error)

    @rac.hookimpl
    def rac_rollback_started(self, run_id: str, scope: str, seqs: list[int],
                             reason: str) -> None:
        cache.rolled_back()  # LangGraph's cached tool results from before it are stale

    @rac.hookimpl
    def rac_approve_action(self, tool: str, args: dict[str, Any]) -> bool | None:
        # The answer a person gave through interrupt() for this very call, if any.
        return approvals.verdict_for(tool, args)
