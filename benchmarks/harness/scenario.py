"""Scenarios: a goal as ordered slots with candidate options, and a predicate over the world."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from benchmarks.harness.clock import VirtualClock
    from benchmarks.worlds.base import World


@dataclass
class Option:
    """One way to fill a slot of a goal: a tool and a function from what is done to arguments."""

    tool: str
    args: Callable[[dict[str, Any]], dict[str, Any]]
    label: str


@dataclass
class Slot:
    """One step of a goal with its candidate options, cheapest first.

    ``creates`` is False for a step that removes something instead (cancel the old booking).
    """

    name: str
    options: Callable[[dict[str, Any]], list[Option]]
    creates: bool = True


@dataclass
class Scenario:
    """A task in a world: its slots in order, what may be undone on purpose, its flavour text.

    ``text`` is what the task tells the agent; faults it does not mention (a machine breakdown)
    must be discovered. ``goal`` is the predicate over world state; ``allowed_undo`` names
    pre-existing effects the goal itself removes.
    """

    world: str
    name: str
    slots: list[Slot]
    text: str
    goal: Callable[[World], bool]
    make_world: Callable[[VirtualClock], World]
    allowed_undo: frozenset[str] = frozenset()
    params: dict[str, Any] = field(default_factory=dict)

    @property
    def key(self) -> str:
        """``world/name``."""
        return f"{self.world}/{self.name}"

    def expected_live(self) -> int:
        """How many effects are live when the goal is met (one per creating slot)."""
        return sum(1 for s in self.slots if s.creates)
