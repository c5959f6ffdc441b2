"""The effects RAC's recovery logic asks for, and the sync and async drivers that perform them.

The logic of a call (attempts, alternatives, rollback) is written once, as a generator that
yields :class:`Invoke` and :class:`Sleep` effects; :func:`drive_sync` and :func:`drive_async`
carry them out, so the blocking and the asyncio paths share every decision.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Generator
from dataclasses import dataclass
from typing import Any, NoReturn, TypeVar

from rac.clock import Clock

T = TypeVar("T")


@dataclass(slots=True)
class Invoke:
    """Call a tool. The driver sends back ``(True, value)`` or ``(False, exception)``."""

    call: Callable[[dict[str, Any]], Any]
    acall: Callable[[dict[str, Any]], Awaitable[Any]] | None
    args: dict[str, Any]
    shielded: bool = False


@dataclass(slots=True)
class Sleep:
    """Wait before the next attempt (``shielded`` during a rollback)."""

    seconds: float
    shielded: bool = False


Effect = Invoke | Sleep
Flow = Generator[Effect, Any, T]


def drive_sync(flow: Flow[T], clock: Clock, passthrough: tuple[type[BaseException], ...]) -> T:
    """Run ``flow`` on the calling thread."""
    send: Any = None
    while True:
        try:
            effect = flow.send(send)
        except StopIteration as stop:
            return stop.value  # type: ignore[no-any-return]
        if isinstance(effect, Sleep):
            try:
                clock.sleep(effect.seconds)
            except BaseException as e:
                _throw(flow, e)
            send = None
            continue
        try:
            send = (True, effect.call(effect.args))
        except passthrough as e:
            _throw(flow, e)
        except Exception as e:  # noqa: BLE001 - every tool failure is data for the flow
            send = (False, e)
        except BaseException as e:
            _throw(flow, e)


async def drive_async(flow: Flow[T], clock: Clock,
                      passthrough: tuple[type[BaseException], ...], *,
                      offload: bool = False) -> T:
    """Run ``flow`` without blocking the event loop. Effects marked ``shielded`` (the steps of a
    rollback) are finished even if the task is cancelled meanwhile; the cancellation is re-raised
    once the flow is done, so a rollback never stops midway.

    ``offload``: the flow's own steps (its decisions and its writes to the log, between two
    effects) run on a worker thread, because the log's writes wait on a disk or a server (a
    SQLite fsync, a PostgreSQL round trip); the loop goes on meanwhile. A step once begun is
    finished; a cancellation that arrives during one takes effect at the next effect, as it
    would have had the step run on the loop."""
    send: Any = None
    cancelled = False

    async def step(fn: Callable[..., Any], *args: Any) -> tuple[Any, bool]:
        """One step of the flow, and whether a cancellation arrived during it."""
        if not offload:
            return fn(*args), False
        result: tuple[Any, bool] = await _shielded(asyncio.to_thread(fn, *args))
        return result

    async def throw(exc: BaseException) -> NoReturn:
        await step(_throw, flow, exc)
        raise exc  # pragma: no cover - _throw always raises

    while True:
        (done, got), late = await step(_advance, flow, send)
        if done:
            if cancelled or late:
                raise asyncio.CancelledError() from None
            return got  # type: ignore[no-any-return]
        effect: Effect = got
        if late:
            if not effect.shielded:
                await throw(asyncio.CancelledError())
            cancelled = True
        if isinstance(effect, Sleep):
            if effect.shielded:
                cancelled |= (await _shielded(clock.asleep(effect.seconds)))[1]
            else:
                try:
                    await clock.asleep(effect.seconds)
                except asyncio.CancelledError as e:
                    await throw(e)
            send = None
            continue
        try:
            if effect.shielded:
                value, was_cancelled = await _shielded(_acall(effect))
                cancelled |= was_cancelled
            else:
                value = await _acall(effect)
            send = (True, value)
        except passthrough as e:
            await throw(e)
        except Exception as e:  # noqa: BLE001 - every tool failure is data for the flow
            send = (False, e)
        except BaseException as e:
            await throw(e)


def _advance(flow: Flow[Any], value: Any) -> tuple[bool, Any]:
    """Send ``value`` into ``flow``: (False, its next effect) or (True, what it returned).
    (A StopIteration may not cross a thread's future, so it is caught here.)"""
    try:
        return False, flow.send(value)
    except StopIteration as stop:
        return True, stop.value


async def _acall(effect: Invoke) -> Any:
    if effect.acall is not None:
        return await effect.acall(effect.args)
    return await asyncio.to_thread(effect.call, effect.args)


async def _shielded(work: Awaitable[Any]) -> tuple[Any, bool]:
    """Await ``work`` to completion even if the caller is cancelled; say if it was."""
    task = asyncio.ensure_future(work)
    cancelled = False
    while True:
        try:
            return await asyncio.shield(task), cancelled
        except asyncio.CancelledError:
            if task.done():
                if task.cancelled():
                    raise
                return task.result(), True  # finished as the cancel arrived: keep its result
            cancelled = True


def _throw(flow: Flow[Any], exc: BaseException) -> NoReturn:
    """Let the flow record the interruption, then re-raise ``exc``."""
    try:
        flow.throw(exc)
    except StopIteration:
        raise exc from None
    flow.close()
    raise exc
