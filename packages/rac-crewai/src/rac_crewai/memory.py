"""CrewAI's memory tools (``Crew(memory=True)`` or a ``Memory``) under RAC.

With memory on, CrewAI adds a "Save to memory" and a "Search memory" tool to each task, after
RAC wrapped the agents' tools, so their calls ran outside the run: a saved "FL-101 is booked"
stayed in the crew's memory after RAC cancelled FL-101, and nothing in the log said it was
there. An enabled crew's ``_add_memory_tools`` is replaced on the instance so that:

* "Save to memory" is a tool of the run whose undo is "Forget saved memory": it saves each item
  with ``Memory.remember`` (one at a time, so the ids of what it saved are known; CrewAI's own
  tool saves several items in the background) and returns those ids with its message; a
  rollback forgets exactly those records (``Memory.forget(record_ids=...)``). The model is not
  offered "Forget saved memory".
* "Search memory" is logged as a read-only tool (unless the engine declares it otherwise).

A standalone ``Agent.kickoff`` of an agent with a ``memory`` adds the same two tools itself,
inside its ``_prepare_kickoff`` (CrewAI calls ``create_memory_tools`` there, with no method of
its own to replace): :func:`guarding_memory` makes the tools that call creates, while the
kickoff RAC scoped prepares, the guarded ones above (``crewai.tools.memory_tools`` is given, once,
a ``create_memory_tools`` that does so only inside such a scope and is CrewAI's own elsewhere).

Pairs declared in code for these names win.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from contextvars import ContextVar
from typing import Any, TypeVar

from crewai.tools import BaseTool
from pydantic import BaseModel, Field, PrivateAttr

import rac

#: The names CrewAI gives its memory tools, and the undo RAC adds.
SAVE, SEARCH, FORGET = "Save to memory", "Search memory", "Forget saved memory"
#: Instance attribute naming the engine a crew's memory tools are guarded for.
MEMORY_ATTR = "_rac_crewai_memory_engine"

R = TypeVar("R")
#: Wraps tools for an engine: ``guard(tools, peers)``.
Guard = Callable[[list[BaseTool], list[BaseTool]], list[BaseTool]]


class ForgetSchema(BaseModel):
    """Arguments of :class:`ForgetSaved`."""

    record_ids: list[str] = Field(..., description="The ids of the memory records to forget.")


class SaveToMemory(BaseTool):
    """CrewAI's "Save to memory" (same name, description and arguments), saving each item with
    ``Memory.remember`` and returning the ids it saved (``record_ids``) with its message."""

    name: str = SAVE
    description: str = ""
    _memory: Any = PrivateAttr()

    def __init__(self, original: BaseTool, memory: Any) -> None:
        super().__init__(name=original.name, description=original.description,
                         args_schema=original.args_schema)
        self._memory = memory

    def _run(self, contents: list[str] | str, **kwargs: Any) -> dict[str, Any]:
        items = [contents] if isinstance(contents, str) else list(contents)
        ids = []
        for item in items:
            record = self._memory.remember(item)
            if record is not None:
                ids.append(str(record.id))
        return {"message": f"Saved {len(ids)} of {len(items)} item(s) to memory.",
                "record_ids": ids}


class ForgetSaved(BaseTool):
    """The undo of :class:`SaveToMemory`: forget the records it saved."""

    name: str = FORGET
    description: str = ""
    args_schema: type[BaseModel] = ForgetSchema
    _memory: Any = PrivateAttr()

    def __init__(self, memory: Any) -> None:
        super().__init__(name=FORGET, description="Forget memory records saved earlier in "
                         "this run (RAC's undo of Save to memory).")
        self._memory = memory

    def _run(self, record_ids: list[str], **kwargs: Any) -> dict[str, Any]:
        forgotten = self._memory.forget(record_ids=list(record_ids)) if record_ids else 0
        return {"forgotten": forgotten, "record_ids": list(record_ids)}


def declare(engine: rac.RAC) -> None:
    """Declare the memory tools' pair and read (once; declarations in code win)."""
    registry = engine.registry
    if SAVE not in registry.pairs:
        registry.add(SAVE, rac.Compensation(FORGET, args={"record_ids": "result.record_ids"}))
    if SEARCH not in registry.read_only:
        registry.add_read_only(SEARCH)


def _is_memory_tool(tool: BaseTool) -> bool:
    return type(tool).__name__ in ("RememberTool", "RecallMemoryTool") and \
        tool.name in (SAVE, SEARCH)


def guard_memory_tools(engine: rac.RAC, tools: list[BaseTool], memory: Any, guard: Guard
                       ) -> list[BaseTool]:
    """``tools`` with CrewAI's memory tools under RAC (``guard(tools, peers)`` wraps tools for
    the engine); the undo is offered to the open run, not to the model. Other tools are left
    as they are."""
    found = [t for t in tools if _is_memory_tool(t)]
    if not found:
        return tools
    forget = ForgetSaved(memory)
    mine = [SaveToMemory(t, memory) if t.name == SAVE else t for t in found]
    declare(engine)
    run = engine.current_run()
    if run is not None:
        from rac_crewai.tool_table import as_rac_tool  # tool_table imports the MCP modules

        run.add_tools([as_rac_tool(t) for t in (*mine, forget) if run.tool(t.name) is None])
    guarded = dict(zip((id(t) for t in found), guard(mine, [*mine, forget]), strict=True))
    return [guarded.get(id(t), t) for t in tools]


def scope_memory(crew: Any, engine: rac.RAC, guard: Guard) -> None:
    """Put the memory tools CrewAI adds to each task of ``crew`` under ``engine`` (once)."""
    if crew.__dict__.get(MEMORY_ATTR) is engine:
        return
    add = getattr(type(crew), "_add_memory_tools", None)
    if not callable(add):
        return
    bound = add.__get__(crew)

    def _add_memory_tools(tools: list[BaseTool], memory: Any) -> list[BaseTool]:
        return guard_memory_tools(engine, bound(tools, memory), memory, guard)

    object.__setattr__(crew, MEMORY_ATTR, engine)
    object.__setattr__(crew, "_add_memory_tools", _add_memory_tools)


#: The engine and guard of the standalone kickoff preparing its tools in this context.
_PREPARING: ContextVar[tuple[rac.RAC, Guard] | None] = ContextVar(
    "rac_crewai_memory_preparing", default=None)
_INSTALL_LOCK = threading.Lock()


def _install() -> None:
    """Give ``crewai.tools.memory_tools`` a ``create_memory_tools`` that guards what it makes
    inside :func:`guarding_memory` (once; CrewAI imports it at each call, by name)."""
    from crewai.tools import memory_tools

    with _INSTALL_LOCK:
        original = memory_tools.create_memory_tools
        if getattr(original, "_rac_crewai_guarding", False):
            return

        @functools.wraps(original)
        def create_memory_tools(memory: Any) -> list[BaseTool]:
            tools = original(memory)
            preparing = _PREPARING.get()
            if preparing is None:
                return tools
            engine, guard = preparing
            return guard_memory_tools(engine, tools, memory, guard)

        create_memory_tools._rac_crewai_guarding = True  # type: ignore[attr-defined]
        memory_tools.create_memory_tools = create_memory_tools


def guarding_memory(engine: rac.RAC, guard: Guard, prepare: Callable[..., R]
                    ) -> Callable[..., R]:
    """``agent._prepare_kickoff`` whose memory tools ("Save to memory", "Search memory") are
    under ``engine``, as a crew's are (:func:`guard_memory_tools`)."""
    _install()

    @functools.wraps(prepare)
    def prepared(*args: Any, **kwargs: Any) -> R:
        token = _PREPARING.set((engine, guard))
        try:
            return prepare(*args, **kwargs)
        finally:
            _PREPARING.reset(token)

    return prepared
