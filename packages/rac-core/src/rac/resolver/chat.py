"""Talking to a chat model: the small protocol RAC needs, and one bounded question.

RAC asks a model two kinds of question (see :mod:`rac.resolver.prompts`) and needs nothing
from it but text back. Two shapes are accepted without importing any framework:

* a LangChain ``BaseChatModel`` (or anything else with ``invoke(prompt)`` returning a message
  whose ``content`` is text or a list of text parts), duck-typed: ``rac`` never imports
  ``langchain``;
* a plain callable ``prompt -> text``.

:func:`ask` runs one question on a worker thread and gives up after a timeout, measured both
in real time (a model that hangs) and on the engine's clock (so a test with
:class:`rac.testing.VirtualClock` can make a scripted model "take" 45 seconds without waiting).
A model that raises, hangs or answers with something that is not text is an answer of
``None`` with the reason; :func:`ask` itself never raises.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from rac.clock import Clock

#: A model as a plain function: the prompt in, the model's text out.
PromptFn = Callable[[str], Any]


@runtime_checkable
class ChatModel(Protocol):
    """What RAC uses of a LangChain ``BaseChatModel``: ``invoke`` with a prompt string,
    returning a message with ``content``."""

    def invoke(self, input: Any, /, *args: Any, **kwargs: Any) -> Any:
        """Answer ``input`` (a prompt string)."""
        ...


@dataclass(frozen=True, slots=True)
class Answer:
    """What came back from one question: the model's text, or None and why not."""

    text: str | None
    reason: str | None = None
    #: seconds the answer took on the engine's clock
    elapsed: float = 0.0


def prompt_fn(model: ChatModel | PromptFn) -> PromptFn:
    """``model`` as a function ``prompt -> reply``: its ``invoke`` for a chat model, itself
    for a plain callable. Raises TypeError naming what was given when it is neither."""
    invoke = getattr(model, "invoke", None)
    if callable(invoke):
        return invoke  # type: ignore[no-any-return]
    if callable(model):
        return model
    raise TypeError(f"a model must be a chat model with invoke(prompt) (such as a LangChain "
                    f"BaseChatModel) or a callable prompt -> text, got {type(model).__name__}")


def message_text(reply: Any) -> str:
    """The text of a model's reply: a string, a message's ``content`` string, or the text
    parts of a ``content`` list joined. Raises TypeError for anything else."""
    if isinstance(reply, str):
        return reply
    content = getattr(reply, "content", None)
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for part in content:
            if isinstance(part, str):
                parts.append(part)
            elif isinstance(part, dict) and part.get("type") == "text" \
                    and isinstance(part.get("text"), str):
                parts.append(part["text"])
        if parts:
            return "".join(parts)
    raise TypeError(f"the model replied with a {type(reply).__name__}, not text or a message "
                    "with text content")


def ask(fn: PromptFn, prompt: str, *, timeout: float, clock: Clock) -> Answer:
    """Ask ``fn`` one question, bounded by ``timeout`` seconds (real time and ``clock``).
    Never raises: a failure is an :class:`Answer` with ``text`` None and the reason."""
    box: dict[str, Any] = {}
    done = threading.Event()

    def work() -> None:
        try:
            box["reply"] = fn(prompt)
        except BaseException as e:  # noqa: BLE001 - reported as the answer's reason
            box["error"] = e
        finally:
            done.set()

    start = clock.now()
    # A daemon thread, not a pool: a model that never answers must not keep the process alive.
    threading.Thread(target=work, name="rac-resolver-model", daemon=True).start()
    if not done.wait(timeout):
        return Answer(None, f"the model did not answer within {timeout:g}s", timeout)
    elapsed = clock.now() - start
    if "error" in box:
        e = box["error"]
        return Answer(None, f"the model raised {type(e).__name__}: {e}", elapsed)
    if elapsed > timeout:
        return Answer(None, f"the model answered after {elapsed:g}s, over the timeout of "
                            f"{timeout:g}s", elapsed)
    try:
        return Answer(message_text(box["reply"]), None, elapsed)
    except TypeError as e:
        return Answer(None, str(e), elapsed)
