"""A scripted model: canned replies in order, for tests and the offline demo."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from rac.clock import Clock


@dataclass(frozen=True, slots=True)
class Slow:
    """A reply that takes ``seconds`` on the model's clock before it comes back."""

    text: str
    seconds: float


#: One scripted reply: text, an exception to raise, a slow reply, or a function of the prompt.
Reply = str | BaseException | Slow | Callable[[str], str]


class ScriptedModel:
    """A model that answers each prompt with the next scripted reply.

    A callable ``prompt -> text``, so it plugs into :class:`rac.resolver.LLMResolver` like any
    model. ``prompts`` lists what it was asked. A :class:`Slow` reply advances ``clock`` (a
    :class:`rac.testing.VirtualClock` in tests) by its seconds: a timeout without a real wait.
    Asked more often than scripted, it raises RuntimeError (a model that fails).
    """

    def __init__(self, replies: Iterable[Reply] = (), *, clock: Clock | None = None) -> None:
        self._replies = list(replies)
        self._clock = clock
        self._lock = threading.Lock()
        self.prompts: list[str] = []

    def __call__(self, prompt: str) -> str:
        with self._lock:
            self.prompts.append(prompt)
            if not self._replies:
                raise RuntimeError(f"the scripted model has no reply left for prompt "
                                   f"#{len(self.prompts)}")
            reply = self._replies.pop(0)
        if isinstance(reply, BaseException):
            raise reply
        if isinstance(reply, Slow):
            if self._clock is None:
                raise RuntimeError("a Slow reply needs ScriptedModel(clock=...)")
            self._clock.sleep(reply.seconds)
            return reply.text
        if callable(reply):
            return reply(prompt)
        return reply

    @property
    def left(self) -> int:
        """How many replies are still scripted."""
        return len(self._replies)
