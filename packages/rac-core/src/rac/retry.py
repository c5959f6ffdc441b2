"""Retry policies: how many times a call is tried and how long RAC waits between tries."""

from __future__ import annotations

import random

from pydantic import BaseModel, ConfigDict, Field, model_validator


class RetryPolicy(BaseModel):
    """How a failing call is retried while its error is transient.

    ``max_attempts`` counts every call: ``max_attempts=3`` calls the tool at most three times
    (one call and two retries); ``max_attempts=1`` never retries. The wait before retry ``n``
    (``n`` = 1 for the first retry) is ``initial_delay * multiplier ** (n - 1)``, capped at
    ``max_delay``, then spread by up to ``jitter`` (a fraction: 0.1 means +/-10%). A
    ``Retry-After`` given by the error is honoured as the least wait. ``multiplier=1`` gives a
    fixed delay; ``initial_delay=0`` none.
    """

    model_config = ConfigDict(frozen=True)

    max_attempts: int = Field(default=3, ge=1)
    initial_delay: float = Field(default=0.5, ge=0)
    multiplier: float = Field(default=2.0, ge=1)
    max_delay: float = Field(default=30.0, ge=0)
    jitter: float = Field(default=0.1, ge=0, le=1)

    @model_validator(mode="after")
    def _check(self) -> RetryPolicy:
        if self.max_delay < self.initial_delay:
            raise ValueError(
                f"RetryPolicy.max_delay ({self.max_delay}) must be >= initial_delay ({self.initial_delay})"
            )
        return self

    @classmethod
    def none(cls) -> RetryPolicy:
        """A policy that calls once and never retries."""
        return cls(max_attempts=1, initial_delay=0, jitter=0)

    def delay(self, retry: int, *, retry_after: float | None = None,
              rng: random.Random | None = None) -> float:
        """Seconds to wait before retry number ``retry`` (1-based)."""
        base = min(self.initial_delay * self.multiplier ** max(retry - 1, 0), self.max_delay)
        if self.jitter and base:
            spread = base * self.jitter
            base = base + (rng or random).uniform(-spread, spread)
        base = max(base, 0.0)
        if retry_after is not None:
            base = max(base, float(retry_after))
        return base
