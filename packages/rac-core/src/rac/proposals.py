"""Opt-in: compensation pairs proposed by a model for tools nobody declared a pair for.

RAC never calls a model by itself. Register :class:`ProposedCompensations` with a function that
asks your model (or any other source) and returns a proposal; RAC validates it like a code
declaration, against the tools it knows, before it is ever used, and remembers the answer per
tool. A proposal that names an unknown tool, the tool itself, or a malformed mapping is
rejected (logged, treated as no compensator)::

    def ask_model(tool: str, description: str, candidates: dict[str, str]) -> str | dict | None:
        ...  # e.g. prompt an LLM with the tool and the candidate tools' descriptions

    engine = rac.RAC(plugins=[ProposedCompensations(ask_model)], tools=[...])
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from rac.errors import ConfigurationError
from rac.events import emit
from rac.hookspecs import hookimpl
from rac.registry import Compensation, CompensationRegistry

if TYPE_CHECKING:
    from rac.engine import RAC
    from rac.models import Record

#: ``(tool, its description, {candidate tool: description}) -> proposal or None``
Proposer = Callable[[str, str, dict[str, str]], "str | Mapping[str, Any] | Compensation | None"]


class ProposedCompensations:
    """A plugin that fills in compensation pairs from a proposer, validated and cached."""

    def __init__(self, propose: Proposer) -> None:
        self._propose = propose
        self._cache: dict[str, Compensation | None] = {}
        self._lock = threading.Lock()

    @hookimpl(trylast=True)
    def rac_resolve_compensation(self, engine: RAC, record: Record) -> Compensation | None:
        tool = record.tool
        if tool in engine.registry.pairs or tool in engine.registry.read_only:
            return None  # declared in code: the registry answers
        with self._lock:
            if tool in self._cache:
                return self._cache[tool]
        proposal = self._validated(engine, tool)
        with self._lock:
            self._cache[tool] = proposal
        return proposal

    def _validated(self, engine: RAC, tool: str) -> Compensation | None:
        described = engine.tools.get(tool)
        candidates = {n: t.description for n, t in engine.tools.items() if n != tool}
        raw = self._propose(tool, described.description if described else "", candidates)
        if raw is None:
            return None
        try:
            comp = CompensationRegistry().add(tool, raw)
            if comp.tool not in engine.tools:
                raise ConfigurationError(f"proposed compensating tool {comp.tool!r} for {tool!r} "
                                         "is not a tool the engine knows")
        except ConfigurationError as e:
            emit("rac.proposal_rejected", level="warning", tool=tool, status="rejected",
                 error=str(e))
            return None
        emit("rac.proposal_accepted", tool=tool, status="accepted", compensator=comp.tool)
        return comp
