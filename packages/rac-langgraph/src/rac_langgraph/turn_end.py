"""Seeing the end of a ``create_agent`` invocation without a model hook.

A ``wrap_model_call`` hook sees the model answer without a tool call, but LangChain runs every
such hook through LangSmith's ``traceable`` wrapper on every model call (two per one-tool turn),
which costs more than everything else RAC does in a turn. Instead, :class:`RACMiddleware` adds one
private key to the agent's state whose channel is a :class:`TurnChannel`. It never holds a value
(nodes read it empty; it is never written, checkpointed, streamed or returned), but LangGraph
tells every channel when a run is finishing (``BaseChannel.finish``): after each
superstep that triggers no further node, i.e. after a model step, which is either the last
step of the invocation or, when the model asked for tools (sent to the tool node with
``Send``), followed by the tool step.

LangGraph builds the channels of an invocation from their specs (``from_checkpoint``) when the
invocation starts, in the context the graph is invoked in, and every node of the invocation runs
in a copy of that context. The fresh channel puts itself in a context variable there, so the
tool calls of the invocation find it (:func:`current_turn`) and record the run they joined;
``finish`` then marks that run completed. A model step that asked for tools finishes it too,
and the next tool call sets it running again (the run stays joinable); so the run is
``running`` whenever a model call between two tool steps is under way, ``completed`` from a
model answer that asks for tools until those tools start (LangGraph's bookkeeping of the step),
and ``completed`` when the invocation's last step is over. An interrupt or an exception ends
the invocation without ``finish``: the run stays running, as a paused or aborted turn should.

Measured with ``valgrind --tool=callgrind`` on a one-tool-call turn (about 9 M instructions),
the key costs LangGraph about 70 k instructions per invocation (an ordinary extra state key
costs more), the ``wrap_model_call`` hook it replaces (called on both model calls) about
340 k.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextvars import ContextVar
from typing import TYPE_CHECKING, Annotated, Any, NotRequired, Self

from langchain.agents.middleware.types import PrivateStateAttr
from langgraph.channels.base import BaseChannel
from langgraph.errors import EmptyChannelError
from typing_extensions import TypedDict

import rac

if TYPE_CHECKING:
    from rac_langgraph.runs import TurnRuns

#: The state key of the channel (private: never in the agent's input or output).
STATE_KEY = "rac_turn"

_CURRENT: ContextVar[TurnChannel | None] = ContextVar("rac_langgraph_turn", default=None)


class TurnChannel(BaseChannel[None, None, None]):
    """The channel of one invocation of one agent: the run its tool calls joined, finished
    when LangGraph finishes the invocation's last step (see the module docstring)."""

    __slots__ = ("owner", "turns", "run", "agent", "own")

    def __init__(self, owner: object, turns: TurnRuns) -> None:
        super().__init__(type(None))
        #: The adapter object (RACToolCalls) whose tool calls use this channel.
        self.owner = owner
        self.turns = turns
        #: The run the invocation's tool calls joined, and their agent id (set by the first).
        self.run: rac.Run | None = None
        self.agent = ""
        #: False when the run is the caller's own (``with engine.run()``): never finished here.
        self.own = True

    @property
    def ValueType(self) -> Any:  # noqa: N802 - LangGraph's name
        return type(None)

    @property
    def UpdateType(self) -> Any:  # noqa: N802 - LangGraph's name
        return type(None)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, TurnChannel) and other.owner is self.owner

    def __hash__(self) -> int:
        return id(self.owner)

    def from_checkpoint(self, checkpoint: Any) -> Self:
        """A new invocation starts: a fresh channel, made current in the invocation's context."""
        fresh = object.__new__(type(self))  # __init__'s work, without its calls
        fresh.typ, fresh.key, fresh.owner, fresh.turns = self.typ, self.key, self.owner, self.turns
        fresh.run, fresh.agent, fresh.own = None, "", True
        _CURRENT.set(fresh)
        return fresh

    def copy(self) -> Self:
        # Local reads (conditional edges) copy every channel; this one holds no value to copy.
        return self

    def get(self) -> None:
        raise EmptyChannelError()

    def is_available(self) -> bool:
        return False

    def update(self, values: Sequence[None]) -> bool:
        return False

    def finish(self) -> bool:
        """A step that triggers no node is over: mark the run of this invocation completed."""
        run = self.run
        if run is not None and self.own:
            self.turns.end(run)
        return False


def current_turn() -> TurnChannel | None:
    """The channel of the create_agent invocation the current tool call belongs to, if any."""
    return _CURRENT.get()


def turn_state_schema(owner: object, turns: TurnRuns) -> type:
    """The ``state_schema`` of a middleware: one private key whose channel is a TurnChannel."""
    channel = TurnChannel(owner, turns)
    fields = {STATE_KEY: NotRequired[Annotated[None, channel, PrivateStateAttr]]}
    return TypedDict("RACTurnState", fields)  # type: ignore[operator,no-any-return]
