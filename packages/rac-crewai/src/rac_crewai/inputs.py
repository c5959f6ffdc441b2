"""Run ids that tell the inputs of ``kickoff_for_each`` apart.

``kickoff_for_each`` (and its async forms) copy the crew once per input, in input order, and
kick each copy off: each copy is a run of its own. While an enabled crew's ``kickoff_for_each``
runs, each copy it makes is numbered, and its run is named ``run-<random>-input-<n>`` (``n``
from 0, the input's index), so the log says which input a run was for.
"""

from __future__ import annotations

import functools
import inspect
import itertools
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from typing import Any, TypeVar

from rac.run.keys import new_run_id

T = TypeVar("T")

#: Instance attribute holding the input index of a crew copied by ``kickoff_for_each``.
INPUT_ATTR = "_rac_crewai_input_index"

_NUMBERS: ContextVar[Iterator[int] | None] = ContextVar("rac_crewai_inputs", default=None)


def numbering_inputs(method: Callable[..., Any]) -> Callable[..., Any]:
    """``method`` (a ``kickoff_for_each``, sync or async) with the crew copies it makes
    numbered."""
    if inspect.iscoroutinefunction(method):
        @functools.wraps(method)
        async def anumbered(*args: Any, **kwargs: Any) -> Any:
            token = _NUMBERS.set(itertools.count())
            try:
                return await method(*args, **kwargs)
            finally:
                _NUMBERS.reset(token)

        return anumbered

    @functools.wraps(method)
    def numbered(*args: Any, **kwargs: Any) -> Any:
        token = _NUMBERS.set(itertools.count())
        try:
            return method(*args, **kwargs)
        finally:
            _NUMBERS.reset(token)

    return numbered


def number_input(crew: T) -> T:
    """Give a copy made by ``kickoff_for_each`` the index of its input; returns ``crew``."""
    numbers = _NUMBERS.get()
    if numbers is not None:
        object.__setattr__(crew, INPUT_ATTR, next(numbers))
    return crew


def input_run_id(crew: Any) -> str | None:
    """The run id of a numbered copy's kickoff (None for a crew kicked off by the user)."""
    index = crew.__dict__.get(INPUT_ATTR)
    return f"{new_run_id()}-input-{index}" if isinstance(index, int) else None
