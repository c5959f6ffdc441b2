"""Approving irreversible calls with LangGraph's own human in the loop: ``interrupt()``.

A tool declared ``irreversible={tool: "approve"}`` has no undo, so RAC asks before it runs
(the core's ``rac_approve_action`` hook). In a LangGraph thread with a checkpointer the adapter
asks the person through ``interrupt()``: the graph pauses with an :data:`APPROVAL` payload in
``result["__interrupt__"]``, and ``graph.invoke(Command(resume=answer), config)`` continues, in
this process or a fresh one. The answer becomes the hook's verdict for that one call: approved,
the tool runs; denied, or an answer RAC cannot read (pending), it is refused before it runs and
the model is told which. Without a checkpointer a graph cannot resume, so no interrupt is
raised and the call is refused as waiting for approval.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from langgraph.types import interrupt

import rac
from rac.events import emit
from rac.registry import Irreversible

#: The ``type`` of the interrupt payload RAC raises to ask for an approval.
APPROVAL = "rac.approval"
#: Answers that approve or deny (strings compared case-insensitively); a mapping answers with
#: its ``"approved"`` field (and may give a ``"reason"``).
APPROVE_WORDS = frozenset({"approve", "approved", "yes", "y", "ok", "allow"})
DENY_WORDS = frozenset({"deny", "denied", "no", "n", "reject", "rejected"})

#: The verdict for the call being run in this context: (tool, args, verdict).
_VERDICT: ContextVar[tuple[str, dict[str, Any], bool | None] | None] = ContextVar(
    "rac_langgraph_approval", default=None)


def needs_approval(engine: rac.RAC, tool: str) -> bool:
    """True if calls of ``tool`` must be approved before they run."""
    return engine.registry.irreversible.get(tool) is Irreversible.APPROVE


def payload(tool: str, args: Mapping[str, Any], call_id: str | None) -> dict[str, Any]:
    """What the interrupt carries to the person who decides."""
    return {"type": APPROVAL, "tool": tool, "args": dict(args), "tool_call_id": call_id,
            "question": f"{tool} cannot be undone. Run it with these arguments?",
            "answers": "Command(resume='approve') or Command(resume='deny'), or "
                       "{'approved': bool, 'reason': str}"}


def verdict_of(answer: Any) -> tuple[bool | None, str]:
    """The verdict an interrupt's answer gives (True approved, False denied, None not
    understood: the call stays waiting), and the reason the person gave, if any."""
    reason = ""
    if isinstance(answer, Mapping):
        reason = str(answer.get("reason") or "")
        answer = answer.get("approved")
    if answer is True or answer is False:
        return answer, reason
    if isinstance(answer, str):
        word = answer.strip().lower()
        if word in APPROVE_WORDS:
            return True, reason
        if word in DENY_WORDS:
            return False, reason
    return None, reason


def ask(tool: str, args: Mapping[str, Any], call_id: str | None) -> tuple[bool | None, str]:
    """Ask for approval through ``interrupt()``: the first time this raises LangGraph's
    ``GraphInterrupt`` (the graph pauses); when the thread resumes it returns the verdict of
    the answer given (see :func:`verdict_of`) and what the model is told besides: the
    person's reason for a denial. An answer that is neither an approval nor a denial leaves
    the call waiting, and is reported as a warning naming it."""
    answer = interrupt(payload(tool, args, call_id))
    verdict, reason = verdict_of(answer)
    if verdict is None:
        emit("rac_langgraph.approval_unread", level="warning", tool=tool,
             tool_call_id=call_id, answer=repr(answer)[:200],
             expected="'approve', 'deny' or {'approved': bool, 'reason': str}")
    note = f"The person who decided said: {reason}" if reason else ""
    return verdict, note


@contextmanager
def decided(tool: str, args: Mapping[str, Any], verdict: bool | None) -> Iterator[None]:
    """Within the block, :func:`verdict_for` answers ``verdict`` for this one call."""
    token = _VERDICT.set((tool, dict(args), verdict))
    try:
        yield
    finally:
        _VERDICT.reset(token)


def verdict_for(tool: str, args: Mapping[str, Any]) -> bool | None:
    """The verdict given in this context for a call of ``tool`` with ``args``, or None."""
    current = _VERDICT.get()
    if current is None or current[0] != tool or current[1] != dict(args):
        return None
    return current[2]
