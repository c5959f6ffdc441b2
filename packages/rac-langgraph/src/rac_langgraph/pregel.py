"""What RAC reads of a running LangGraph step that LangGraph offers no public API for, in one
place.

A tool call's turn is the thread's nearest ``input`` checkpoint (see :mod:`rac_langgraph.runs`),
so RAC must read the thread's checkpoints from inside a tool node. LangGraph's public API gives a
step its thread id (``config["configurable"]["thread_id"]``), its own checkpoint id and
namespace, and whether the thread is persisted at all (``runtime.execution_info``), but not the
checkpointer, the root graph's checkpoint id from inside a subgraph, nor the step the running
invocation started at. Those three are read here from LangGraph's private config keys (checked
against langgraph 1.2). One more is read off the running loop itself, as a shortcut only: the id
of a new turn's ``input`` checkpoint, at the step of its first node
(:func:`new_input_checkpoint`), which spares the turn's first tool step a read of the
checkpointer behind LangGraph's background saves; when it cannot be read for sure, the
checkpointer is read as before. ``tests/adapters/langgraph/test_pregel_internals.py`` fails loudly if a
LangGraph release changes them; at run time a step of a persisted thread whose keys are missing
emits one ``rac_langgraph.langgraph_internals_changed`` warning, and turns then fall back to
the in-process rule (the last human message) that threads without a checkpointer use.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from langgraph.types import Command

from rac.events import emit

#: The graph's checkpointer, in a step's ``configurable`` (LangGraph's
#: ``CONFIG_KEY_CHECKPOINTER``; a subgraph gets its parent's).
CHECKPOINTER_KEY = "__pregel_checkpointer"
#: The step's scratchpad, whose ``stop`` is the running loop's step bound
#: (``CONFIG_KEY_SCRATCHPAD``).
SCRATCHPAD_KEY = "__pregel_scratchpad"
#: checkpoint namespace -> checkpoint id of each graph the step runs in, the root graph's under
#: ``""`` (``CONFIG_KEY_CHECKPOINT_MAP``).
CHECKPOINT_MAP_KEY = "checkpoint_map"
#: The invocation's runtime (``CONFIG_KEY_RUNTIME``); its ``stream_writer`` is made once per
#: invocation of a graph and shared by every task of it (``Send`` branches too).
RUNTIME_KEY = "__pregel_runtime"
#: The invocation's durability mode, when given (``CONFIG_KEY_DURABILITY``; default "async").
DURABILITY_KEY = "__pregel_durability"
#: The step's way to schedule child tasks (``CONFIG_KEY_CALL``): a ``functools.partial`` whose
#: ``schedule_task`` keyword is a method of the running loop (``accept_push`` / ``aaccept_push``).
CALL_KEY = "__pregel_call"
#: Set in a loop's config when its parent resumes it (``CONFIG_KEY_RESUMING``).
RESUMING_KEY = "__pregel_resuming"

_warned: list[bool] = []

try:  # the limit a loop runs with when its config gives none (LangGraph fills it in)
    from langgraph._internal._config import DEFAULT_RECURSION_LIMIT as _LIMIT

    _DEFAULT_LIMIT: int | None = int(_LIMIT)
except ImportError:  # pragma: no cover - a release that moved it: the start is then unknown
    _DEFAULT_LIMIT = None


def checkpointer(configurable: Mapping[str, Any]) -> Any | None:
    """The checkpointer of the graph a step runs in, or None if the thread is not persisted."""
    return configurable.get(CHECKPOINTER_KEY)


def root_checkpoint(configurable: Mapping[str, Any]) -> str | None:
    """The id of the root graph's checkpoint the step runs from (also from a subgraph)."""
    checkpoints = configurable.get(CHECKPOINT_MAP_KEY)
    root = checkpoints.get("") if isinstance(checkpoints, Mapping) else None
    return str(root) if root else None


def loop_start(config: Mapping[str, Any]) -> str | None:
    """The step number the running invocation's ``input`` checkpoint has (or will have once
    LangGraph has saved it), from the loop's bound: LangGraph stops a loop that started at step
    ``s`` before step ``s + recursion_limit + 1``. None if unknown."""
    configurable = config.get("configurable") or {}
    stop = getattr(configurable.get(SCRATCHPAD_KEY), "stop", None)
    limit = config.get("recursion_limit", _DEFAULT_LIMIT)
    if isinstance(stop, int) and isinstance(limit, int):
        return str(stop - limit - 1)
    return None


def invocation(configurable: Mapping[str, Any]) -> Any | None:
    """An object made once per invocation of the graph a step runs in and shared by all its
    tasks (its stream writer), or None: it tells one invocation from another in this
    process (hold it while using it as a key, so its identity is not reused)."""
    runtime = configurable.get(RUNTIME_KEY)
    return getattr(runtime, "stream_writer", None)


def new_input_checkpoint(config: Mapping[str, Any], root: str) -> str | None:
    """The id of the running invocation's own ``input`` checkpoint, read off LangGraph's loop
    (nothing is read from the checkpointer), for a step that runs from ``root``, the checkpoint
    the loop saved right after it: the first node's step of an invocation that gave the graph
    new input. None whenever that is not certain: another step, a subgraph's loop, a loop that
    resumed the thread (no input, a ``Command``, a re-entry by run id), one whose checkpoints
    are not saved as it runs (``durability="exit"``), or LangGraph's internals changed.

    The loop is the one whose ``schedule_task`` (``accept_push``) the step's ``CONFIG_KEY_CALL``
    holds; its ``checkpoint_config`` is the checkpoint the step runs from and its
    ``prev_checkpoint_config`` the one saved before it."""
    configurable = config.get("configurable") or {}
    start = loop_start(config)
    step = (config.get("metadata") or {}).get("langgraph_step")
    if start is None or not isinstance(step, int) or step != int(start) + 2:
        return None
    keywords = getattr(configurable.get(CALL_KEY), "keywords", None)
    schedule = keywords.get("schedule_task") if isinstance(keywords, Mapping) else None
    loop = getattr(schedule, "__self__", None)
    given = getattr(loop, "input", None)
    if given is None or isinstance(given, Command) or getattr(loop, "is_nested", True):
        return None
    loop_config = getattr(loop, "config", None)
    if not isinstance(loop_config, Mapping) or (loop_config.get("metadata") or {}).get(
            "run_id") is not None or (loop_config.get("configurable") or {}).get(RESUMING_KEY):
        return None  # a re-entry LangGraph may treat as a resume: no input checkpoint
    current = getattr(loop, "checkpoint_config", None)
    previous = getattr(loop, "prev_checkpoint_config", None)
    metadata = getattr(loop, "checkpoint_metadata", None)
    if not isinstance(current, Mapping) or not isinstance(previous, Mapping) \
            or not isinstance(metadata, Mapping):
        return None
    now = current.get("configurable") or {}
    before = previous.get("configurable") or {}
    if now.get("checkpoint_id") != root or now.get("checkpoint_ns", "") != "" \
            or before.get("checkpoint_ns", "") != "" \
            or before.get("thread_id") != now.get("thread_id") \
            or metadata.get("source") != "loop" or metadata.get("step") != int(start) + 1:
        return None
    found = before.get("checkpoint_id")
    return str(found) if found else None


def durability(configurable: Mapping[str, Any]) -> str:
    """The invocation's durability mode: "sync", "async" (LangGraph's default) or "exit"
    (no checkpoint is saved before the invocation ends)."""
    mode = configurable.get(DURABILITY_KEY)
    return mode if isinstance(mode, str) else "async"


def persisted(runtime: Any) -> bool:
    """True if LangGraph says (publicly) that the step's thread is persisted: its
    ``execution_info`` has a thread id only when the graph has a checkpointer."""
    info = getattr(runtime, "execution_info", None)
    return getattr(info, "thread_id", None) is not None


def internals_missing(runtime: Any) -> None:
    """A persisted thread's step lacks the private keys this module reads: say so, once per
    process (turns fall back to the in-process rule, and a resumed thread after a restart no
    longer finds its turn's run)."""
    if persisted(runtime) and not _warned:
        _warned.append(True)
        emit("rac_langgraph.langgraph_internals_changed", level="warning",
             missing=[CHECKPOINTER_KEY, CHECKPOINT_MAP_KEY],
             consequence="turns of checkpointed threads are not durable across processes")
