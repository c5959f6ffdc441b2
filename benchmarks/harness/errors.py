"""Errors the worlds and the fault layer raise.

They subclass RAC's ``TransientError``/``PermanentError`` the way a real API client maps HTTP
status codes to exception types; approaches without RAC see only the message text, as a model
would.
"""

from __future__ import annotations

from rac.errors import PermanentError, TransientError


class WorldRejected(PermanentError):
    """The world refused the request for good (no seats, overlap, unknown id): a 4xx."""


class InjectedTransient(TransientError):
    """A fault the layer injected that goes away on retry: timeout, 5xx, 429."""

    def __init__(self, message: str, *, kind: str, after_effect: bool,
                 retry_after: float | None = None) -> None:
        super().__init__(message, retry_after=retry_after)
        self.kind = kind
        self.after_effect = after_effect


class InjectedPermanent(PermanentError):
    """A fault the layer injected that will not go away: a 4xx, a breakdown."""

    def __init__(self, message: str, *, kind: str, after_effect: bool = False) -> None:
        super().__init__(message)
        self.kind = kind
        self.after_effect = after_effect


def looks_transient(message: str) -> bool:
    """How a prompted model reads an error: by its words only (misleading text misleads it)."""
    text = message.lower()
    permanent_words = ("permanent", "rejected", "not found", "full", "invalid", "breakdown",
                       "overlap", "unknown", "no longer", "precedence")
    if any(w in text for w in permanent_words):
        return False
    return any(w in text for w in ("timeout", "timed out", "503", "502", "429", "try again",
                                   "unavailable", "overloaded", "temporar"))
