"""The resolver plugin: compensation pairs and argument mappings proposed by a model.

:class:`LLMResolver` implements three hooks:

* ``rac_resolve_compensation``: for a side-effecting tool nobody declared a pair for, the pair
  the log's store remembers, or else the model's answer to "which tool undoes this one?",
  checked (:mod:`rac.resolver.validate`) and stored;
* ``rac_map_compensation_args``: when RAC's own mapping cannot fill the compensator's
  parameters, the mapping the store remembers, or else the model's answer, checked against the
  compensator's schema and this call's arguments and result, and stored;
* ``rac_approve_compensation``: holds a compensation whose pair (or mapping) waits for an
  operator (``rac pairs approve``), so the action stays live and is named, never silently
  undone by an unapproved guess.

It never raises out of a hook except with :class:`rac.CompensationMappingError`, the mapping
hook's documented way of saying "cannot map" (the record then waits in ``compensation_failed``
with that message). A model that raises, hangs or answers garbage is "no proposal", logged with
the reason.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from rac.errors import CompensationMappingError, ConfigurationError
from rac.events import emit
from rac.hookspecs import hookimpl
from rac.mapping import map_arguments
from rac.models import PairRecord, RecordKind
from rac.registry import Compensation
from rac.resolver.book import (
    APPROVED,
    AUTO,
    DECLARED,
    LLM,
    PROPOSED,
    RECORDED,
    REJECTED,
    digest_matches,
    find_pair,
    pair_book,
    pair_digest,
    pair_key,
    pairs_of,
    save_pair,
)
from rac.resolver.chat import ChatModel, PromptFn, ask, prompt_fn
from rac.resolver.fitness import unfit
from rac.resolver.prompts import compensator_prompt, mapping_prompt
from rac.resolver.validate import (
    NoProposal,
    compensator_of,
    mapping_of,
    parse_answer,
    secret_path,
)
from rac.stores import PairStore

if TYPE_CHECKING:
    from rac.engine import RAC
    from rac.models import Record
    from rac.tools import Tool

#: What happens to a new proposal: used at once, held until an operator approves it, or only
#: recorded (listed by ``rac pairs``, never used).
Policy = Literal["auto", "approve", "record"]
_STATUS_OF_POLICY: dict[str, str] = {"auto": AUTO, "approve": PROPOSED, "record": RECORDED}


@dataclass
class _EngineState:
    """What one resolver knows about one engine in this process."""

    #: tool -> the compensation to use (None: none), for answers that do not change
    resolved: dict[str, Compensation | None] = field(default_factory=dict)
    #: registry version whose declared pairs were written to the store
    synced_version: int = -1
    #: one lock per tool, so one question per tool is asked at a time
    locks: dict[str, threading.Lock] = field(default_factory=dict)


class LLMResolver:
    """A plugin that asks a model for the compensation pairs and argument mappings nobody
    declared, checks every answer, and remembers it in the log's store.

    Args:
        model: a LangChain ``BaseChatModel`` (anything with ``invoke(prompt)``), a callable
            ``prompt -> text``, or None to use only pairs already stored (a recovery process).
        policy: what a new proposal becomes: ``"auto"`` (used at once), ``"approve"`` (held
            until ``rac pairs approve``; the default) or ``"record"`` (listed, never used).
        timeout: seconds a model may take to answer one question (on the engine's clock and in
            real time); a later answer is "no proposal".
    """

    def __init__(self, model: ChatModel | PromptFn | None, *, policy: Policy = "approve",
                 timeout: float = 30.0) -> None:
        if policy not in _STATUS_OF_POLICY:
            raise ConfigurationError(f"LLMResolver: policy must be one of "
                                     f"{sorted(_STATUS_OF_POLICY)}, got {policy!r}")
        if isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout <= 0:
            raise ConfigurationError(f"LLMResolver: timeout must be a positive number of "
                                     f"seconds, got {timeout!r}")
        self.policy: Policy = policy
        self.timeout = float(timeout)
        self._ask = prompt_fn(model) if model is not None else None
        self._states: weakref.WeakKeyDictionary[Any, _EngineState] = \
            weakref.WeakKeyDictionary()
        self._lock = threading.Lock()

    # -- hooks ----------------------------------------------------------------------------------
    @hookimpl(trylast=True)
    def rac_resolve_compensation(self, engine: RAC, record: Record) -> Compensation | None:
        try:
            return self._resolve(engine, record)
        except Exception as e:  # noqa: BLE001 - a resolver must never break a call
            emit("rac.pair_resolver_failed", level="error", tool=record.tool, status="error",
                 error=f"{type(e).__name__}: {e}")
            return None

    @hookimpl
    def rac_map_compensation_args(
            self, engine: RAC, record: Record, compensation: Compensation, tool: Tool | None,
            args: dict[str, Any], result: Any, idempotency_key: str,
            before: Any = None) -> dict[str, Any] | None:
        if tool is None:
            return None  # RAC says the compensator is not available
        try:
            self._synced(engine)
        except Exception as e:  # noqa: BLE001 - listing declared pairs is a convenience
            emit("rac.pair_resolver_failed", level="error", tool=record.tool, status="error",
                 error=f"{type(e).__name__}: {e}")
        try:
            return map_arguments(compensation, tool=record.tool, args=args, result=result,
                                 params=tool.params, required=tool.required,
                                 idempotency_key=idempotency_key, before=before)
        except CompensationMappingError as own:
            if compensation.args is not None:
                raise  # a declared (or stored) mapping is the authority: never overridden
            first = own
        try:
            return self._map(engine, record, compensation, tool, args, result, idempotency_key,
                             first)
        except CompensationMappingError:
            raise
        except Exception as e:  # noqa: BLE001 - a resolver must never break a rollback
            emit("rac.pair_resolver_failed", level="error", tool=record.tool, status="error",
                 compensator=compensation.tool, error=f"{type(e).__name__}: {e}")
            raise CompensationMappingError(
                f"{first}; the model resolver failed: {type(e).__name__}: {e}") from e

    @hookimpl
    def rac_approve_compensation(self, engine: RAC, record: Record, compensation: Compensation,
                                 args: dict[str, Any]) -> bool | None:
        declared = engine.registry.pairs.get(record.tool)
        if declared is not None and declared.args is not None:
            return None  # declared with its mapping: nothing of ours is in it
        tools = _tools_of(engine)
        digest = pair_digest(record.tool, tools.get(record.tool), compensation.tool,
                            tools.get(compensation.tool))
        key = pair_key(record.tool, compensation.tool, digest)
        book = pair_book(engine.store)
        try:
            pair = book.get_pair(key)
            if pair is None and record.tool not in tools:
                stored = pairs_of(book, record.tool)
                pair = _newest_usable(stored, compensation.tool, tools)
                if pair is None and _newest_usable(stored, compensation.tool) is not None:
                    # a model's pair for these tools, approved for a compensator that has
                    # changed since: the approval lapsed
                    emit("rac.pair_held", level="warning", tool=record.tool, key=key,
                         status="held", seq=record.seq, run_id=record.run_id,
                         error=f"the schema of {compensation.tool} changed since its pair "
                               "was approved: the approval lapsed")
                    return False
        except Exception as e:  # noqa: BLE001 - unknown verdict: hold, never run unapproved
            emit("rac.pair_held", level="warning", tool=record.tool, key=key, status="held",
                 error=f"cannot read the pair's approval: {type(e).__name__}: {e}")
            return False
        if pair is None or pair.source != LLM or pair.status == APPROVED:
            return None
        if pair.status == AUTO:
            # used at once, as policy "auto" asks, but named: nobody reviewed this pair
            emit("rac.pair_unreviewed", level="warning", tool=record.tool, key=key,
                 status=AUTO, seq=record.seq, run_id=record.run_id,
                 compensator=compensation.tool,
                 error="undone by a model-proposed pair, not reviewed (`rac pairs approve` "
                       "or `rac pairs reject` it)")
            return None
        emit("rac.pair_held", level="warning", tool=record.tool, key=key, status="held",
             seq=record.seq, run_id=record.run_id, pair_status=pair.status)
        return False

    # -- the pair -------------------------------------------------------------------------------
    def _state(self, engine: RAC) -> _EngineState:
        with self._lock:
            state = self._states.get(engine)
            if state is None:
                state = self._states[engine] = _EngineState()
            return state

    def _tool_lock(self, state: _EngineState, tool: str) -> threading.Lock:
        with self._lock:
            return state.locks.setdefault(tool, threading.Lock())

    def _resolve(self, engine: RAC, record: Record) -> Compensation | None:
        tool = record.tool
        registry = engine.registry
        state = self._synced(engine)
        if record.kind is RecordKind.COMPENSATION or tool in registry.pairs \
                or tool in registry.read_only:
            return None  # declared in code or by an MCP server: the registry answers
        if tool in state.resolved:
            return state.resolved[tool]
        book = pair_book(engine.store)
        with self._tool_lock(state, tool):
            if tool in state.resolved:
                return state.resolved[tool]
            comp, final = self._stored_or_asked(engine, record, book)
            if final:
                state.resolved[tool] = comp
            return comp

    def _stored_or_asked(self, engine: RAC, record: Record, book: PairStore
                         ) -> tuple[Compensation | None, bool]:
        """The compensation of ``record.tool`` and whether the answer is settled for this
        process."""
        tool = record.tool
        tools = _tools_of(engine)
        subject = tools.get(tool)
        stored = pairs_of(book, tool)
        for pair in sorted(stored, key=lambda p: -p.updated_at):
            if pair.source != LLM:
                continue
            if digest_matches(pair.schema_hash, tool, subject, pair.compensator,
                              tools.get(pair.compensator)):
                # (a process that does not offer the tool itself, such as a recovery, cannot
                # tell whether its schema changed: the compensator's, part of what was
                # approved, must be unchanged)
                why = None if pair.status == APPROVED else unfit(
                    engine, tool, pair.compensator, tools, auto=pair.status == AUTO)
                if why is not None:  # a person's approval stands; nothing else unchecked
                    self._no_proposal(tool, f"stored pair {pair.key}: {why}")
                    return None, True
                emit("rac.pair_reused", tool=tool, key=pair.key, status=pair.status,
                     compensator=pair.compensator)
                return _usable(pair), True
        if self._ask is None:
            self._no_proposal(tool, "no stored pair and no model to ask")
            return None, True
        candidates = {n: t for n, t in tools.items()
                      if n != tool and n not in engine.registry.read_only}
        # the model is shown only tools that could be an undo at all
        offered = {n: t for n, t in candidates.items()
                   if unfit(engine, tool, n, tools, auto=False) is None}
        answer = ask(self._ask, compensator_prompt(subject, tool, offered),
                     timeout=self.timeout, clock=engine.clock)
        try:
            if answer.text is None:
                raise NoProposal(answer.reason or "no answer")
            name = compensator_of(parse_answer(answer.text), tool, candidates,
                                  engine.registry.read_only)
            why = None if name is None else unfit(engine, tool, name, tools,
                                                   auto=self.policy == "auto")
            if why is not None:
                raise NoProposal(f"the model proposed {name!r}: {why}")
        except NoProposal as e:
            self._no_proposal(tool, str(e))
            return None, True
        if name is None:
            self._no_proposal(tool, "the model says no tool undoes it")
            return None, True
        now = engine.clock.now()
        digest = pair_digest(tool, subject, name, tools.get(name))
        pair = PairRecord(key=pair_key(tool, name, digest), tool=tool, compensator=name,
                          args={}, source=LLM, status=_STATUS_OF_POLICY[self.policy],
                          schema_hash=digest, note=f"proposed by the model (policy "
                                                   f"{self.policy!r})",
                          created_at=now, updated_at=now)
        save_pair(book, pair)
        emit("rac.pair_proposed", tool=tool, compensator=name, key=pair.key,
             status=pair.status)
        return _usable(pair), True

    def _no_proposal(self, tool: str, reason: str) -> None:
        emit("rac.pair_no_proposal", level="warning", tool=tool, status="no_proposal",
             error=reason)

    def _synced(self, engine: RAC) -> _EngineState:
        """This engine's state, after writing its declared pairs to the store (once per
        registry version), so that ``rac pairs`` lists them next to the proposed ones."""
        state = self._state(engine)
        version = engine.registry.version
        if state.synced_version == version:
            return state
        state.synced_version = version
        book = pair_book(engine.store)
        for pair in declared_pairs(engine):
            known = find_pair(book, pair.key)
            if known is None or (known.source != LLM and (known.args, known.source) != (pair.args, pair.source)):
                if save_pair(book, pair):  # never over a model's mapping for the declared pair
                    emit("rac.pair_declared", tool=pair.tool, compensator=pair.compensator,
                         key=pair.key, source=pair.source, status=pair.status)
        return state

    # -- the mapping ----------------------------------------------------------------------------
    def _map(self, engine: RAC, record: Record, compensation: Compensation, tool: Tool,
             args: dict[str, Any], result: Any, idempotency_key: str,
             first: CompensationMappingError) -> dict[str, Any]:
        tools = _tools_of(engine)
        digest = pair_digest(record.tool, tools.get(record.tool), compensation.tool, tool)
        key = pair_key(record.tool, compensation.tool, digest)
        book = pair_book(engine.store)
        state = self._synced(engine)
        with self._tool_lock(state, record.tool):
            pair = _pair_for(book, key, record.tool, compensation.tool, tools)
            if pair is not None and pair.args:
                return self._apply(pair, record, tool, args, result, idempotency_key, first)
            if self._ask is None:
                raise CompensationMappingError(
                    f"{first}; no mapping is stored for {key} and no model is configured to "
                    "propose one")
            answer = ask(self._ask, mapping_prompt(tools.get(record.tool), record.tool, tool,
                                                   args, result),
                         timeout=self.timeout, clock=engine.clock)
            try:
                if answer.text is None:
                    raise NoProposal(answer.reason or "no answer")
                mapping = mapping_of(parse_answer(answer.text), tool, args, result)
            except NoProposal as e:
                self._no_proposal(record.tool, f"mapping for {compensation.tool}: {e}")
                raise CompensationMappingError(
                    f"{first}; the model's mapping was refused: {e}") from None
            now = engine.clock.now()
            status = _STATUS_OF_POLICY[self.policy]
            if pair is None or pair.source != LLM:  # a declared pair's mapping is ours
                pair = PairRecord(key=key, tool=record.tool, compensator=compensation.tool,
                                  source=LLM, status=status, schema_hash=digest,
                                  note="mapping proposed by the model for a declared pair",
                                  created_at=now)
            elif pair.status in (APPROVED, AUTO) and status != pair.status:
                pair.status = status  # the operator approved it without this mapping
                pair.note = "mapping proposed after the pair was approved: approve it again"
            pair.args = mapping
            pair.updated_at = now
            save_pair(book, pair)
            emit("rac.pair_mapping_proposed", tool=record.tool, compensator=compensation.tool,
                 key=key, status=pair.status, args=mapping)
            if record.tool in state.resolved:
                state.resolved[record.tool] = _usable(pair)
            return self._apply(pair, record, tool, args, result, idempotency_key, first)

    def _apply(self, pair: PairRecord, record: Record, tool: Tool, args: dict[str, Any],
               result: Any, idempotency_key: str, first: CompensationMappingError
               ) -> dict[str, Any]:
        if pair.status in (REJECTED, RECORDED):
            raise CompensationMappingError(
                f"{first}; the stored mapping {pair.key} is {pair.status}, not in use")
        if pair.status != APPROVED:  # a person's approval stands; nothing else unchecked
            for param, path in pair.args.items():
                secret = secret_path(path)
                if secret is not None:
                    raise CompensationMappingError(
                        f"{first}; the stored mapping {pair.key} reads {secret!r} ({param} <- "
                        f"{path}), a secret: refused")
        return map_arguments(Compensation(tool=pair.compensator, args=dict(pair.args)),
                             tool=record.tool, args=args, result=result, params=tool.params,
                             required=tool.required, idempotency_key=idempotency_key)


def declared_pairs(engine: RAC) -> list[PairRecord]:
    """The pairs ``engine`` declares (in code or from MCP metadata) as pair records with
    status ``declared``; the source is ``code``, or ``mcp:<server>`` for a pair an MCP
    server's metadata declared (``mcp`` when the server was registered without a name)."""
    registry = engine.registry
    # what MCP registered on this engine (rac.mcp keeps each tool's server there)
    from_mcp = getattr(engine.extensions.get("rac.mcp"), "tools", None) or {}
    tools = _tools_of(engine)
    now = engine.clock.now()
    out = []
    for tool, comp in registry.pairs.items():
        digest = pair_digest(tool, tools.get(tool), comp.tool, tools.get(comp.tool))
        args = dict(comp.args) if isinstance(comp.args, Mapping) else {}
        mcp_tool = from_mcp.get(tool)
        server = getattr(mcp_tool, "server", None)
        source = "code" if mcp_tool is None else f"mcp:{server}" if server else "mcp"
        out.append(PairRecord(key=pair_key(tool, comp.tool, digest), tool=tool,
                              compensator=comp.tool, args=args, source=str(source),
                              status=DECLARED, schema_hash=digest,
                              note="a callable maps its arguments" if callable(comp.args)
                              and not isinstance(comp.args, Mapping) else None,
                              created_at=now, updated_at=now))
    return out


def _usable(pair: PairRecord) -> Compensation | None:
    """The compensation a stored pair stands for: approved and proposed pairs make the call
    compensable (a proposed one is held at rollback until approved); rejected and recorded
    ones do not."""
    if pair.status not in (APPROVED, AUTO, PROPOSED):
        return None
    return Compensation(tool=pair.compensator, args=dict(pair.args) if pair.args else None)


def _pair_for(book: PairStore, key: str, tool: str, compensator: str,
              tools: Mapping[str, Tool]) -> PairRecord | None:
    """The stored pair with ``key``, or, in a process that does not offer ``tool`` itself
    (its schema, part of the key, is unknown), the newest LLM pair of the two tools."""
    pair = book.get_pair(key)
    if pair is None and tool not in tools:
        pair = _newest_usable(pairs_of(book, tool), compensator, tools)
    return pair


def _newest_usable(pairs: list[PairRecord], compensator: str,
                   tools: Mapping[str, Tool] | None = None) -> PairRecord | None:
    """The newest model pair of ``compensator`` among ``pairs``; with ``tools``, only one
    made for the compensator as it is now (see :func:`rac.resolver.book.digest_matches`)."""
    mine = [p for p in pairs if p.source == LLM and p.compensator == compensator
            and (tools is None or digest_matches(p.schema_hash, p.tool, None, compensator,
                                                 tools.get(compensator)))]
    return max(mine, key=lambda p: p.updated_at) if mine else None


def _tools_of(engine: RAC) -> dict[str, Tool]:
    """The tools on offer: the engine's, and those of the run open in this context."""
    run = engine.current_run()
    return run.tools() if run is not None else dict(engine.tools)
