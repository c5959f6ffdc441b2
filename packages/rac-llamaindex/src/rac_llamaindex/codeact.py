"""A ``CodeActAgent``'s functions for its code executor, each call under RAC.

A ``CodeActAgent`` runs the code its model writes through one tool, ``execute``, with the
functions the user put in the executor's namespace. The side effects are those functions'
calls, not the execution: ``enable_rac`` makes ``execute`` a delegating call (not logged, see
:mod:`rac.adapters.delegation`), and :func:`code_functions` gives the executor the agent's
tools as plain functions whose every call is a call of the agent's run: logged under the
agent's name, retried, undone on a later failure. When one fails for good, the code gets
:class:`CodeCallFailed` (its text is RAC's report) and the execution's output carries the report,
so the model hears what was undone.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any

from llama_index.core.agent.workflow import BaseWorkflowAgent

import rac
from rac_llamaindex.guarded_tool import RACFunctionTool
from rac_llamaindex.tool_table import tool_name


class CodeCallFailed(RuntimeError):
    """A function called by a CodeAct agent's code failed for good under RAC; ``str()`` is
    RAC's report (what was undone)."""


def _plain(tool: RACFunctionTool) -> Callable[..., Any]:
    """``tool`` as the function the code calls: positional arguments bound by the user's
    function's signature, the tool's raw result returned."""
    fn = tool.real_fn
    try:
        sig: inspect.Signature | None = inspect.signature(fn)
    except (TypeError, ValueError):  # a callable without a signature: keywords only
        sig = None

    @functools.wraps(fn)
    def call(*args: Any, **kwargs: Any) -> Any:
        if args:
            if sig is None:
                raise TypeError(f"{tool_name(tool)} takes keyword arguments only")
            kwargs = dict(sig.bind(*args, **kwargs).arguments)
        out = tool.call(**kwargs)
        if out.is_error:
            raise CodeCallFailed(out.content)
        return out.raw_output

    return call


def code_functions(agent: BaseWorkflowAgent) -> dict[str, Callable[..., Any]]:
    """The enabled agent's tools as functions for its code executor's namespace, by name:
    ``{"book_flight": ..., ...}``; each call runs under RAC as the agent's call.

    Raises :class:`rac.ConfigurationError` when RAC is not enabled on ``agent`` yet."""
    guarded = [t for t in agent.tools or () if isinstance(t, RACFunctionTool)]
    if not guarded:
        raise rac.ConfigurationError(
            f"agent {agent.name!r} has no tools under RAC: call enable_rac(agent, ...) first, "
            "then give its executor code_functions(agent)")
    return {tool_name(t): _plain(t) for t in guarded if not t.rac_delegating}
