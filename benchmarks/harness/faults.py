"""The seeded fault layer: rules keyed by the logical call, identical for every approach.

A rule fires on a call of its tool whose arguments match its selector, on the listed attempts
of that logical call (same tool, same arguments), with its probability drawn from
``random.Random(f"{seed}:{scenario}:{tool}:{key}:{attempt}:{rule}")``. The global action count
never enters, so the same call fails the same way under every approach.
"""

from __future__ import annotations

import functools
import inspect
import json
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from benchmarks.harness.clock import VirtualClock
from benchmarks.harness.errors import InjectedPermanent, InjectedTransient

IDEMPOTENCY_PARAM = "idempotency_key"
TRANSIENT_TEXT = {
    "timeout": "upstream timeout after 30s",
    "5xx": "503 service unavailable, try again",
    "429": "429 too many requests, retry later",
}


#: kinds that return normally with a result whose ``field`` is missing or wrong
BAD_RESULT = ("missing_field", "wrong_field")


def garble(result: Any, rule: FaultRule) -> Any:
    """A copy of ``result`` with ``rule.field`` dropped (missing_field) or blanked (wrong_field);
    the world's stored reply is never touched."""
    if not isinstance(result, dict) or rule.field not in result:
        return result
    out = dict(result)
    if rule.kind == "missing_field":
        del out[rule.field]
    else:
        out[rule.field] = ""
    return out


@dataclass(frozen=True)
class FaultRule:
    """One way a tool misbehaves.

    ``kind`` is timeout, 5xx, 429, 4xx, latency (the call takes ``delay`` virtual seconds
    longer), missing_field or wrong_field (the effect happened and the call returned normally,
    but ``field`` of the result is missing or blank, as a truncated or garbled response body);
    ``phase`` before_effect or after_effect (the effect happened, then an error came back);
    ``attempts`` limits a transient rule to the first n attempts of a logical call (None: every
    attempt, i.e. permanent); ``match`` selects calls by argument values; ``message`` overrides
    the error text (to mislead).
    """

    tool: str
    kind: str
    phase: str = "before_effect"
    attempts: int | None = 1
    probability: float = 1.0
    match: dict[str, Any] = field(default_factory=dict)
    message: str | None = None
    delay: float = 0.0
    field: str = ""

    @property
    def permanent(self) -> bool:
        """A 4xx never goes away."""
        return self.kind == "4xx"

    def selects(self, args: dict[str, Any]) -> bool:
        """Whether the call's arguments match the selector."""
        return all(args.get(k) == v for k, v in self.match.items())


def call_key(args: dict[str, Any]) -> str:
    """The logical call: its arguments (without any idempotency key), canonically encoded."""
    return json.dumps({k: v for k, v in args.items() if k != IDEMPOTENCY_PARAM},
                      sort_keys=True, default=str)


@dataclass
class FaultStats:
    """What the layer did during one run."""

    tool_calls: int = 0
    injected: int = 0
    first_fault_at: float | None = None
    per_tool: dict[str, int] = field(default_factory=dict)


class FaultLayer:
    """Wraps a world's tools; every call through it counts as a tool call."""

    def __init__(self, rules: list[FaultRule], *, seed: int, scenario: str,
                 clock: VirtualClock) -> None:
        self.rules = rules
        self.seed = seed
        self.scenario = scenario
        self.clock = clock
        self.stats = FaultStats()
        self._attempts: dict[tuple[str, str], int] = {}
        #: the idempotency key of the call in progress (worlds read it, as an API reads a header)
        self.current_key: str | None = None

    def _draw(self, rule_index: int, rule: FaultRule, tool: str, key: str,
              attempt: int) -> bool:
        if rule.probability >= 1.0:
            return True
        rng = random.Random(f"{self.seed}:{self.scenario}:{tool}:{key}:{attempt}:{rule_index}")
        return rng.random() < rule.probability

    def _firing(self, tool: str, args: dict[str, Any], key: str,
                attempt: int) -> FaultRule | None:
        for i, rule in enumerate(self.rules):
            if rule.tool != tool or not rule.selects(args):
                continue
            if rule.attempts is not None and attempt > rule.attempts:
                continue
            if self._draw(i, rule, tool, key, attempt):
                return rule
        return None

    def _noted(self) -> None:
        self.stats.injected += 1
        if self.stats.first_fault_at is None:
            self.stats.first_fault_at = self.clock.now()

    def _raise(self, rule: FaultRule, tool: str, after: bool) -> None:
        self._noted()
        if rule.kind == "4xx":
            raise InjectedPermanent(rule.message or f"{tool}: request rejected (400)",
                                    kind=rule.kind, after_effect=after)
        text = rule.message or f"{tool}: {TRANSIENT_TEXT.get(rule.kind, 'failed')}"
        raise InjectedTransient(text, kind=rule.kind, after_effect=after,
                                retry_after=2.0 if rule.kind == "429" else None)

    def wrap(self, tool: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        """``fn`` with faults injected. Its signature gains an optional ``idempotency_key``, which
        the world honours the way an API honours an Idempotency-Key header."""
        @functools.wraps(fn)
        def call(**args: Any) -> Any:
            self.current_key = args.pop(IDEMPOTENCY_PARAM, None)
            key = call_key(args)
            attempt = self._attempts.get((tool, key), 0) + 1
            self._attempts[(tool, key)] = attempt
            self.stats.tool_calls += 1
            self.stats.per_tool[tool] = self.stats.per_tool.get(tool, 0) + 1
            rule = self._firing(tool, args, key, attempt)
            if rule is not None and rule.kind == "latency":
                self.clock.advance(rule.delay)
                rule = None
            if rule is not None and rule.phase == "before_effect":
                self._raise(rule, tool, after=False)
            result = fn(**args)
            if rule is not None and rule.kind in BAD_RESULT:
                self._noted()
                return garble(result, rule)
            if rule is not None:
                self._raise(rule, tool, after=True)
            return result

        sig = inspect.signature(fn)
        extra = inspect.Parameter(IDEMPOTENCY_PARAM, inspect.Parameter.KEYWORD_ONLY,
                                  default=None, annotation="str | None")
        call.__signature__ = sig.replace(  # type: ignore[attr-defined]
            parameters=[*sig.parameters.values(), extra])
        call.__annotations__ = {**getattr(fn, "__annotations__", {}),
                                IDEMPOTENCY_PARAM: "str | None"}
        return call

    def wrap_all(self, tools: dict[str, Callable[..., Any]]) -> dict[str, Callable[..., Any]]:
        """Every tool of a world, wrapped."""
        return {name: self.wrap(name, fn) for name, fn in tools.items()}
