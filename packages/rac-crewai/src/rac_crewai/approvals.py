"""Approving irreversible tools (``irreversible={tool: "approve"}``) through CrewAI.

RAC asks the ``rac_approve_action`` hook before an irreversible tool declared ``"approve"``
runs. CrewAI's own human-in-the-loop for a tool call is a before-tool-call hook that asks a
person with ``ToolCallHookContext.request_human_input`` and blocks the call on a "no".
:class:`CrewApprovals` (registered by ``enable_rac(crew, ..., approver=...)``) answers RAC's
hook with the user's ``approver``, called with an :class:`Approval` that carries the call and
can ask through CrewAI's prompt (:meth:`Approval.ask`); :func:`ask_in_console` is an approver
that does. A denied or unanswered approval is what the agent reads, and the call never runs.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import rac
from rac.events import emit
from rac_crewai.caller import current_call_context

#: The name :class:`CrewApprovals` is registered under on an engine.
PLUGIN_NAME = "rac_crewai.approvals"
#: Held while a person is asked at the console (one question, one answer at a time).
CONSOLE = threading.Lock()
#: Answers that approve in :func:`ask_in_console`.
YES = frozenset({"approve", "approved", "yes", "y"})


@dataclass(frozen=True)
class Approval:
    """One irreversible call waiting for a decision.

    ``tool`` and ``args`` are the call; ``agent`` is the calling agent's role and ``task``
    the description of its task, when CrewAI names them; ``run_id`` is the RAC run.
    """

    tool: str
    args: dict[str, Any]
    run_id: str
    agent: str | None = None
    task: str | None = None
    hook_context: Any = None

    def ask(self, prompt: str, default_message: str = "Type 'approve' to run it:") -> str:
        """Ask a person at the console through CrewAI's tool-hook prompt
        (``ToolCallHookContext.request_human_input``); their answer.

        One question at a time in the process: the calls of one model turn run in parallel
        threads, and two prompts open at once would race for the console's one input, so an
        answer typed for one call could be read by the other (approving the other charge).
        A second call's question waits until the first one is answered."""
        if self.hook_context is None:
            raise RuntimeError(f"no CrewAI tool call to ask about {self.tool!r} from: it is "
                               "not being called by a CrewAI agent")
        with CONSOLE:
            return str(self.hook_context.request_human_input(prompt=prompt,
                                                             default_message=default_message))


Approver = Callable[[Approval], "bool | None"]


def ask_in_console(approval: Approval) -> bool:
    """An approver that asks at the console through CrewAI's prompt: approved when the answer
    is "approve" (or "yes"), denied otherwise."""
    who = f" ({approval.agent})" if approval.agent else ""
    answer = approval.ask(f"RAC: {approval.tool}{who} cannot be undone. Run it with "
                          f"{approval.args}?")
    return answer.strip().lower() in YES


class CrewApprovals:
    """RAC plugin: ``rac_approve_action`` answered by an approver (see the module)."""

    def __init__(self, approver: Approver) -> None:
        self.approver = approver

    @rac.hookimpl
    def rac_approve_action(self, engine: rac.RAC, run: rac.Run, tool: str,
                           args: dict[str, Any]) -> bool | None:
        context = current_call_context()
        agent = getattr(getattr(context, "agent", None), "role", None)
        task = getattr(getattr(context, "task", None), "description", None)
        approval = Approval(tool=tool, args=dict(args), run_id=run.run_id,
                            agent=agent if isinstance(agent, str) else None,
                            task=task if isinstance(task, str) else None,
                            hook_context=context)
        verdict = self.approver(approval)
        decided = verdict if isinstance(verdict, bool) else None
        emit("rac_crewai.approval", run_id=run.run_id, tool=tool,
             verdict="approved" if decided is True else "denied" if decided is False
             else "pending")
        return decided


def install(engine: rac.RAC, approver: Approver | None) -> None:
    """Make ``approver`` decide the engine's ``"approve"`` tools (replacing an earlier
    one)."""
    if approver is None:
        return
    if not callable(approver):
        raise rac.ConfigurationError(f"approver must be a function of an Approval returning "
                                     f"True, False or None, got {approver!r}")
    plugin = engine.plugin_manager.get_plugin(PLUGIN_NAME)
    if isinstance(plugin, CrewApprovals):
        plugin.approver = approver
    else:
        engine.register_plugin(CrewApprovals(approver), name=PLUGIN_NAME)
