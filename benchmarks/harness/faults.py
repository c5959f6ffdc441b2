"""The seeded fault layer: rules keyed by the logical call, identical for every approach.

A rule fires on a call of its tool whose arguments match its selector, on the listed attempts
of that logical call (same tool, same arguments), with its probability drawn from
``random.Random(f"{seed}:{scenario}:{tool}:{key}:{attempt}:{rule}")`` (a ``sticky`` rule draws
once per logical call, without the attempt, so a fault that fires persists on every attempt as
long as the seed says, never as long as a retry budget allows). The global action count never
enters, so the same call fails the same way under every approach.

What fires is what real tools raise (:mod:`benchmarks.harness.errors`): ``TimeoutError``,
``ConnectionResetError``, ``httpx.HTTPStatusError`` with a status and ``Retry-After``, a
``ValueError`` worded as the tool words a refusal, and each client library's own exception for
a response lost mid-body (:data:`benchmarks.harness.errors.MID_RESPONSE`).
``phase="after_effect"`` commits the effect and then raises, or (``error_result``) returns an
error body, as a server that writes and then answers an error (the call is in doubt for
whoever made it).

Idempotency keys: a tool accepts an ``idempotency_key`` only when the world variant is
``keyed`` and the tool is one that takes a key in real life (``World.keyed_tools``: payments
and bookings behind an API like Stripe's); the world then replays the stored reply for a key it
has seen. Everywhere else a repeated call acts again.
"""

from __future__ import annotations

import functools
import inspect
import json
import random
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from benchmarks.harness import errors
from benchmarks.harness.clock import VirtualClock

IDEMPOTENCY_PARAM = "idempotency_key"
#: how long a held call waits to be released, a safety net only (the harness releases it)
GATE_TIMEOUT_S = 30.0
#: the kinds that raise, and what they raise (see :meth:`FaultLayer.error`)
RAISING = ("timeout", "reset", "5xx", "500", "504", "429", "4xx", "http4xx",
           *errors.MID_RESPONSE)


#: kinds that return normally with a result whose ``field`` is missing or wrong, or (an error
#: body after the effect: what a server that catches its own exception answers, an MCP
#: server's ``isError``) whose whole body is ``{"error": message}``
BAD_RESULT = ("missing_field", "wrong_field", "error_result")


def garble(result: Any, rule: FaultRule) -> Any:
    """A copy of ``result`` with ``rule.field`` dropped (missing_field) or blanked (wrong_field);
    the world's stored reply is never touched."""
    if rule.kind == "error_result":
        return {"error": rule.message or "internal error"}
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

    ``kind``: timeout (``TimeoutError``), reset (``ConnectionResetError``), 5xx / 500 / 504 /
    429 / http4xx (``httpx.HTTPStatusError`` with status 503 / 500 / 504 / 429 with
    ``Retry-After: 2`` / ``status``), 4xx (``ValueError`` with the tool's wording in
    ``message``), one of :data:`errors.MID_RESPONSE` (that library's own exception), latency
    (the call takes ``delay`` virtual seconds longer), missing_field or wrong_field (the effect
    happened and the call returned normally, but ``field`` of the result is missing or blank,
    as a truncated or garbled response body), error_result (the call returned normally with
    ``{"error": message}``). ``phase`` before_effect or after_effect (the effect happened,
    then the error came back). ``attempts`` limits a rule to the first n attempts of a logical
    call (None: every attempt); ``sticky`` draws once per logical call instead of once per
    attempt; ``match`` selects calls by argument values; ``message`` overrides the error text
    (to mislead).
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
    sticky: bool = False
    status: int = 400

    @property
    def permanent(self) -> bool:
        """A 4xx never goes away."""
        return self.kind in ("4xx", "http4xx")

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
    #: faults raised after the effect committed (the caller cannot know it happened)
    in_doubt: int = 0
    first_fault_at: float | None = None
    per_tool: dict[str, int] = field(default_factory=dict)


class FaultLayer:
    """Wraps a world's tools; every call through it counts as a tool call."""

    def __init__(self, rules: list[FaultRule], *, seed: int, scenario: str,
                 clock: VirtualClock, keyed: frozenset[str] = frozenset()) -> None:
        self.rules = rules
        #: tools that accept an ``idempotency_key`` in this variant
        self.keyed = keyed
        self.seed = seed
        self.scenario = scenario
        self.clock = clock
        self.stats = FaultStats()
        self._attempts: dict[tuple[str, str], int] = {}
        #: the idempotency key of the call in progress (worlds read it, as an API reads a header)
        self.current_key: str | None = None
        #: (tool, logical call) -> (entered, release): the call, once invoked, says it entered
        #: and waits for release before doing anything (a call in flight, held by the harness)
        self.gates: dict[tuple[str, str], tuple[threading.Event, threading.Event]] = {}

    def fails_for_good(self, tool: str, args: dict[str, Any]) -> bool:
        """Whether every attempt of this call meets a permanent rule before its effect."""
        return any(r.tool == tool and r.selects(args) and r.permanent and r.attempts is None
                   and r.probability >= 1.0 and r.phase == "before_effect" for r in self.rules)

    def _draw(self, rule_index: int, rule: FaultRule, tool: str, key: str,
              attempt: int) -> bool:
        if rule.probability >= 1.0:
            return True
        at = "*" if rule.sticky else attempt
        rng = random.Random(f"{self.seed}:{self.scenario}:{tool}:{key}:{at}:{rule_index}")
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

    @staticmethod
    def error(rule: FaultRule, tool: str) -> Exception:
        """The exception ``rule`` raises for a call of ``tool``: what a real client raises."""
        if rule.kind == "timeout":
            return errors.timeout(tool, rule.message)
        if rule.kind == "reset":
            return errors.connection_reset(tool, rule.message)
        if rule.kind == "5xx":
            return errors.http_error(tool, 503, rule.message)
        if rule.kind == "500":
            return errors.http_error(tool, 500, rule.message)
        if rule.kind in errors.MID_RESPONSE:
            return errors.MID_RESPONSE[rule.kind](tool)
        if rule.kind == "504":
            return errors.http_error(tool, 504, rule.message)
        if rule.kind == "429":
            return errors.http_error(tool, 429, rule.message, retry_after=2.0)
        if rule.kind == "http4xx":
            return errors.http_error(tool, rule.status, rule.message)
        return ValueError(rule.message or f"{tool}: request rejected")

    def _raise(self, rule: FaultRule, tool: str, after: bool) -> None:
        self._noted()
        if after:
            self.stats.in_doubt += 1
        raise self.error(rule, tool)

    def wrap(self, tool: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        """``fn`` with faults injected. A tool in ``keyed`` gains an optional
        ``idempotency_key``, which the world honours the way an API honours an Idempotency-Key
        header; the others have exactly their own signature."""
        takes_key = tool in self.keyed

        @functools.wraps(fn)
        def call(**args: Any) -> Any:
            if self.gates:
                gate = self.gates.pop((tool, call_key(args)), None)
                if gate is not None:
                    gate[0].set()
                    gate[1].wait(GATE_TIMEOUT_S)
            self.current_key = args.pop(IDEMPOTENCY_PARAM, None) if takes_key else None
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
                if rule.kind == "error_result":
                    self.stats.in_doubt += 1
                return garble(result, rule)
            if rule is not None:
                self._raise(rule, tool, after=True)
            return result

        sig = inspect.signature(fn)
        if takes_key:
            extra = inspect.Parameter(IDEMPOTENCY_PARAM, inspect.Parameter.KEYWORD_ONLY,
                                      default=None, annotation="str | None")
            call.__signature__ = sig.replace(  # type: ignore[attr-defined]
                parameters=[*sig.parameters.values(), extra])
            call.__annotations__ = {**getattr(fn, "__annotations__", {}),
                                    IDEMPOTENCY_PARAM: "str | None"}
        else:
            call.__signature__ = sig  # type: ignore[attr-defined]
        return call

    def wrap_all(self, tools: dict[str, Callable[..., Any]]) -> dict[str, Callable[..., Any]]:
        """Every tool of a world, wrapped."""
        return {name: self.wrap(name, fn) for name, fn in tools.items()}
