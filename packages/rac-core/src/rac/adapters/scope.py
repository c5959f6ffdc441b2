"""Open a run around a framework's entry point (``kickoff``, ``invoke``, ``run``), or join the
run already open: one invocation is one run, and an entry point called inside another's run
(a sub-agent, a nested crew) adds to it."""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable, Iterable
from contextlib import AbstractContextManager, ExitStack
from types import TracebackType
from typing import Any, TypeVar

from rac.engine import RAC
from rac.run import Run
from rac.tools import Tool

R = TypeVar("R")
#: What an entry point's run is opened with: its agent id and the tools it may call.
Prepare = Callable[[], tuple[str | None, Iterable[Any] | None]]


class RunScope:
    """The run of one entry point: the run of ``engine`` already open in this context (joined,
    left as it is on exit), else a new one opened on entry and closed on exit (completed, or
    rolled back when an exception leaves the block, as ``with engine.run()`` does). Works with
    ``with`` and ``async with``. ``tools`` are offered to the run either way, as the tools of
    ``agent_id`` (see :meth:`rac.Run.add_tools`): an agent joining another's run undoes its
    calls through its own tools even when the other has tools of the same names.

    An exception leaving the block that the engine declares control flow
    (``engine.passthrough``: the framework pausing or stopping the agent) closes the run
    without a rollback, as it would close the block normally, and goes on. ``settled(run, exc)``
    replaces that test: True for an exception that needs no rollback (say, RAC rolled the run
    back already and the framework is stopping on the failure RAC reported). ``around(run)`` gives context
    managers entered inside a run this scope opened (framework hooks scoped to the run).
    """

    def __init__(self, engine: RAC, *, agent_id: str | None = None, run_id: str | None = None,
                 tools: Iterable[Tool | Callable[..., Any]] | None = None,
                 settled: Callable[[Run, BaseException], bool] | None = None,
                 around: Callable[[Run], Iterable[AbstractContextManager[Any]]] | None = None
                 ) -> None:
        self.engine = engine
        self.agent_id = agent_id
        self.run_id = run_id
        self.tools = tools
        self.settled = settled
        self.around = around
        #: the run, once entered
        self.run: Run | None = None
        #: True if this scope opened the run (False: it joined one)
        self.opened = False
        self._stack: ExitStack | None = None

    def _enter(self) -> tuple[Run, bool]:
        current = self.engine.current_run()
        opened = current is None
        run = current if current is not None else self.engine.run(agent_id=self.agent_id,
                                                                  run_id=self.run_id)
        if self.tools:  # the entry point's tools, as its agent's (two agents of a run may
            run.add_tools(self.tools, agent_id=self.agent_id)  # have tools of one name)
        self.run, self.opened = run, opened
        return run, opened

    def _enter_around(self, run: Run) -> None:
        if self.around is None:
            return
        stack = ExitStack()
        try:
            for cm in self.around(run):
                stack.enter_context(cm)
        except BaseException:
            stack.close()
            raise
        self._stack = stack

    def _exit_around(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                     tb: TracebackType | None) -> None:
        """Leave the scoped context managers (they see the exception; none may swallow it:
        the run's own exit decides)."""
        stack, self._stack = self._stack, None
        if stack is not None:
            stack.__exit__(exc_type, exc, tb)

    def _passes(self, exc: BaseException | None) -> bool:
        """True if ``exc`` leaves without a rollback (see ``settled``)."""
        if exc is None or self.run is None:
            return False
        if self.settled is not None:
            return self.settled(self.run, exc)
        return isinstance(exc, self.engine.passthrough)

    def __enter__(self) -> Run:
        run, opened = self._enter()
        if opened:
            run.__enter__()
            try:
                self._enter_around(run)
            except BaseException as e:
                run.__exit__(type(e), e, e.__traceback__)
                raise
        return run

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if not self.opened or self.run is None:
            return
        self._exit_around(exc_type, exc, tb)
        if self._passes(exc):
            self.run.__exit__(None, None, None)
        else:
            self.run.__exit__(exc_type, exc, tb)

    async def __aenter__(self) -> Run:
        run, opened = self._enter()
        if opened:
            await run.__aenter__()
            try:
                self._enter_around(run)
            except BaseException as e:
                await run.__aexit__(type(e), e, e.__traceback__)
                raise
        return run

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        if not self.opened or self.run is None:
            return
        self._exit_around(exc_type, exc, tb)
        if self._passes(exc):
            await self.run.__aexit__(None, None, None)
        else:
            await self.run.__aexit__(exc_type, exc, tb)


def open_or_join(engine: RAC, *, agent_id: str | None = None, run_id: str | None = None,
                 tools: Iterable[Tool | Callable[..., Any]] | None = None,
                 settled: Callable[[Run, BaseException], bool] | None = None,
                 around: Callable[[Run], Iterable[AbstractContextManager[Any]]] | None = None
                 ) -> RunScope:
    """A :class:`RunScope`: ``with open_or_join(engine, agent_id=...) as run: ...``."""
    return RunScope(engine, agent_id=agent_id, run_id=run_id, tools=tools, settled=settled,
                    around=around)


def _never() -> bool:
    return False


def in_run(engine: RAC, method: Callable[..., R], prepare: Prepare, *,
           bypass: Callable[[], bool] = _never,
           settled: Callable[[Run, BaseException], bool] | None = None,
           around: Callable[[Run], Iterable[AbstractContextManager[Any]]] | None = None
           ) -> Callable[..., R]:
    """``method`` (an entry point) running in a :class:`RunScope` of ``engine``.

    ``prepare()`` gives the agent id and tools the method's calls use (the run's agent id and
    tools when it opens one; offered as that agent's when it joins one). While ``bypass()``
    is true the method runs as it is (a streaming entry point that only sets up a stream and
    calls the real one later).
    """

    @functools.wraps(method)
    def scoped(*args: Any, **kwargs: Any) -> R:
        if bypass():
            return method(*args, **kwargs)
        agent_id, tools = prepare()
        with RunScope(engine, agent_id=agent_id, tools=tools, settled=settled, around=around):
            return method(*args, **kwargs)

    return scoped


def in_async_run(engine: RAC, method: Callable[..., Awaitable[R]], prepare: Prepare, *,
                 bypass: Callable[[], bool] = _never,
                 settled: Callable[[Run, BaseException], bool] | None = None,
                 around: Callable[[Run], Iterable[AbstractContextManager[Any]]] | None = None
                 ) -> Callable[..., Awaitable[R]]:
    """Async :func:`in_run`."""

    @functools.wraps(method)
    async def scoped(*args: Any, **kwargs: Any) -> R:
        if bypass():
            return await method(*args, **kwargs)
        agent_id, tools = prepare()
        async with RunScope(engine, agent_id=agent_id, tools=tools, settled=settled,
                            around=around):
            return await method(*args, **kwargs)

    return scoped
