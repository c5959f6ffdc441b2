"""Shared pieces of the LangGraph adapter tests: a scripted chat model, the travel world as
LangChain tools, and an engine with a virtual clock."""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence
from typing import Any

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.outputs import ChatResult
from langchain_core.tools import BaseTool, StructuredTool
from pydantic import Field

import rac
from rac.testing import TRAVEL_COMPENSATIONS, TRAVEL_READ_ONLY, TravelWorld, VirtualClock

_ids = itertools.count(1)


class ScriptedModel(GenericFakeChatModel):
    """Answers with the scripted messages in order and remembers every input it got."""

    seen: list[list[BaseMessage]] = Field(default_factory=list)

    def bind_tools(self, tools: Sequence[Any], *, tool_choice: Any = None,
                   **kwargs: Any) -> ScriptedModel:
        return self

    def _generate(self, messages: list[BaseMessage], stop: list[str] | None = None,
                  run_manager: Any = None, **kwargs: Any) -> ChatResult:
        self.seen.append(list(messages))
        return super()._generate(messages, stop=stop, run_manager=run_manager, **kwargs)


def call(name: str, **args: Any) -> dict[str, Any]:
    """One tool call of a scripted model turn."""
    return {"name": name, "args": args, "id": f"call-{next(_ids)}", "type": "tool_call"}


def turn(*calls: dict[str, Any]) -> AIMessage:
    """A model turn making ``calls`` (in parallel when several)."""
    return AIMessage(content="", tool_calls=list(calls))


def say(text: str) -> AIMessage:
    """A final model answer."""
    return AIMessage(content=text)


def model(*messages: AIMessage) -> ScriptedModel:
    """A scripted model answering with ``messages``."""
    return ScriptedModel(messages=iter(messages))


def world_tools(world: TravelWorld, names: Iterable[str] | None = None) -> list[BaseTool]:
    """The world's tools as LangChain tools (all of them, or those named)."""
    wanted = set(names) if names is not None else None
    return [StructuredTool.from_function(fn) for fn in world.tools()
            if wanted is None or fn.__name__ in wanted]


def engine(**kw: Any) -> rac.RAC:
    """An engine over the travel world with an in-memory log and a virtual clock."""
    kw.setdefault("compensations", TRAVEL_COMPENSATIONS)
    kw.setdefault("read_only", TRAVEL_READ_ONLY)
    kw.setdefault("store", "memory://")
    kw.setdefault("clock", VirtualClock())
    kw.setdefault("load_entrypoints", False)
    return rac.RAC(**kw)


def tool_messages(messages: Sequence[BaseMessage]) -> list[ToolMessage]:
    """The tool messages among ``messages``."""
    return [m for m in messages if isinstance(m, ToolMessage)]


def errors(messages: Sequence[BaseMessage]) -> list[ToolMessage]:
    """The tool messages with ``status="error"``."""
    return [m for m in tool_messages(messages) if m.status == "error"]


def records(eng: rac.RAC) -> list[rac.Record]:
    """Every record of every run of ``eng``, oldest run first."""
    out: list[rac.Record] = []
    for info in reversed(eng.store.list_runs()):
        out.extend(eng.store.get_records(info.run_id))
    return out


def actions(recs: Sequence[rac.Record]) -> list[tuple[str, str]]:
    """(tool, status) of the action records."""
    return [(r.tool, str(r.status)) for r in recs if r.kind is rac.RecordKind.ACTION]
