"""What a scripted agent turn is made of and what it leaves (no pytest needed): the vocabulary the
adapter conformance suite (:mod:`rac.testing.adapters`) and the adapters' ``testing`` modules
share, so that a scripted model can be used without a test runner installed."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

#: One tool call of a scripted model turn: (tool name, arguments).
Call = tuple[str, dict[str, Any]]
#: One model turn of a script: tool calls (several: parallel calls of one turn), or the final
#: answer text.
Step = list[Call] | str


@dataclass
class Told:
    """One tool result the model received: the tool the model called (an alternative may have
    answered), its text, and whether the framework marked it an error (None when the
    framework has no such mark)."""

    tool: str
    content: str
    error: bool | None = None


@dataclass
class TurnResult:
    """What a scripted turn left: every tool result the model received, in order (one per tool
    call), and the model's final answer."""

    told: list[Told] = field(default_factory=list)
    final: str | None = None

    def of(self, tool: str) -> list[str]:
        """The texts the model received for calls of ``tool``, in order."""
        return [t.content for t in self.told if t.tool == tool]


__all__ = ["Call", "Step", "Told", "TurnResult"]
