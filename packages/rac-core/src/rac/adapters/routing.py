"""The ``invoke`` of one call: which tool RAC names, called where.

RAC calls ``invoke(name, args)`` for the tool the model asked for (and again for a retry) and
for each declared alternative. The requested tool goes through the framework, as it would have
without RAC; an alternative goes through the framework when the agent has a tool of that name,
else to the tool registered with the run or the engine (a tool the model was not offered).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from rac.run import Run

Call = Callable[[dict[str, Any]], Any]
AsyncCall = Callable[[dict[str, Any]], Awaitable[Any]]
Invoke = Callable[[str, dict[str, Any]], Any]
AsyncInvoke = Callable[[str, dict[str, Any]], Awaitable[Any]]


class UnknownToolError(LookupError):
    """RAC named a tool (an alternative) that neither the agent nor the engine has."""


def _unknown(name: str, hint: str) -> UnknownToolError:
    where = f": {hint}" if hint else (": give it to the agent, or register it with "
                                      "rac.RAC(tools=[...]) or the adapter's tools=[...]")
    return UnknownToolError(f"{name} is neither a tool of this agent nor registered with the "
                            f"engine{where}")


def route(run: Run, requested: str, call: Call, *,
          through: Callable[[str], Call | None] | None = None,
          direct: Callable[[str, Any], Any] | None = None, hint: str = "",
          agent_id: str | None = None) -> Invoke:
    """The ``invoke`` for ``run.execute`` of a call of ``requested``.

    ``call(args)`` runs the requested tool through the framework. For another name,
    ``through(name)`` gives the framework's way to call the agent's tool of that name (or None
    if the agent has none); otherwise the run's or engine's :class:`rac.Tool` is called, and
    ``direct(name, raw)`` turns its raw result into what the framework expects (a tool
    message, say); with ``agent_id``, that agent's tool of the name comes first (see
    :meth:`rac.Run.tool`). A name found nowhere raises :class:`UnknownToolError` (a failure of that
    attempt), with ``hint`` saying where to register it.
    """

    def invoke(name: str, args: dict[str, Any]) -> Any:
        if name == requested:
            return call(args)
        other = through(name) if through is not None else None
        if other is not None:
            return other(args)
        tool = run.tool(name, agent_id)
        if tool is None:
            raise _unknown(name, hint)
        raw = tool.invoke(args)
        return direct(name, raw) if direct is not None else raw

    return invoke


def aroute(run: Run, requested: str, acall: AsyncCall, *,
           through: Callable[[str], AsyncCall | None] | None = None,
           direct: Callable[[str, Any], Any] | None = None, hint: str = "",
           agent_id: str | None = None) -> AsyncInvoke:
    """Async :func:`route`, for ``run.aexecute``."""

    async def ainvoke(name: str, args: dict[str, Any]) -> Any:
        if name == requested:
            return await acall(args)
        other = through(name) if through is not None else None
        if other is not None:
            return await other(args)
        tool = run.tool(name, agent_id)
        if tool is None:
            raise _unknown(name, hint)
        raw = await tool.ainvoke(args)
        return direct(name, raw) if direct is not None else raw

    return ainvoke
