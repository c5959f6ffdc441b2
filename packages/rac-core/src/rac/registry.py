"""Compensation pairs, alternatives and read-only tools, validated when they are declared."""

from __future__ import annotations

import functools
import itertools
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict

from rac.errors import ConfigurationError
from rac.retry import RetryPolicy

ArgsMapper = Callable[[dict[str, Any], Any], Mapping[str, Any]]
_PATH_ROOTS = ("result", "args")
#: Versions of declarations, shared by every registry of the process (see ``version``)
_VERSIONS = itertools.count(1)


class Compensation(BaseModel):
    """How to undo a tool: the compensating tool and how its arguments are built.

    ``args`` is either a mapping of compensator parameter -> path into the original call
    (``"result.booking_id"``, ``"args.passenger_id"``, ``"result"`` for the whole result), or a
    callable ``(args, result) -> dict``, or None to match the compensator's parameter names
    against the result's fields and then the original arguments. ``retry`` overrides the
    engine's compensation retry policy for this pair.
    """

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    tool: str
    args: Mapping[str, str] | ArgsMapper | None = None
    retry: RetryPolicy | None = None


CompensationSpec = str | Compensation | Mapping[str, Any]


def parse_path(path: str, *, tool: str, param: str) -> tuple[str, tuple[str, ...]]:
    """Split ``"result.a.b"`` into ``("result", ("a", "b"))``; raise a ConfigurationError naming
    the tool and parameter when the path is malformed."""
    if not isinstance(path, str):
        raise ConfigurationError(
            f"compensation of {tool!r}: args[{param!r}] must be a path such as "
            f"'result.booking_id' or 'args.passenger_id', got {path!r}")
    return _parse_path(path, tool, param)


@functools.lru_cache(maxsize=1024)
def _parse_path(path: str, tool: str, param: str) -> tuple[str, tuple[str, ...]]:
    if not path.strip():
        raise ConfigurationError(
            f"compensation of {tool!r}: args[{param!r}] must be a path such as "
            f"'result.booking_id' or 'args.passenger_id', got {path!r}")
    parts = tuple(path.strip().split("."))
    if parts[0] not in _PATH_ROOTS or any(not p for p in parts):
        raise ConfigurationError(
            f"compensation of {tool!r}: args[{param!r}] = {path!r} must start with 'result' or "
            f"'args' and name fields separated by dots (e.g. 'result.booking_id')")
    return parts[0], parts[1:]


class CompensationRegistry:
    """Which tool undoes which, which tools stand in for which, and which have no side effect."""

    def __init__(self, compensations: Mapping[str, CompensationSpec] | None = None,
                 alternatives: Mapping[str, Iterable[str]] | None = None,
                 read_only: Iterable[str] = ()) -> None:
        self.pairs: dict[str, Compensation] = {}
        self._passed: set[tuple[Any, ...]] = set()
        #: Changed by every change to the declarations (before and after it), never to a
        #: value another registry had: a check that passed at one version holds until the next
        #: (see :class:`rac.ToolSet`).
        self.version = next(_VERSIONS)
        self.alternatives: dict[str, list[str]] = {}
        self.read_only: set[str] = set()
        for name in read_only:
            self.add_read_only(name)
        for tool, spec in (compensations or {}).items():
            self.add(tool, spec)
        for tool, alts in (alternatives or {}).items():
            self.add_alternatives(tool, alts)

    def add(self, tool: str, spec: CompensationSpec) -> Compensation:
        """Declare that ``spec`` undoes ``tool``. Raises ConfigurationError on a bad declaration."""
        self._passed.clear()  # checks that passed may not pass any more
        self.version = next(_VERSIONS)
        if not isinstance(tool, str) or not tool:
            raise ConfigurationError(f"compensations: a tool name must be a non-empty string, "
                                     f"got {tool!r}")
        comp = self._coerce(tool, spec)
        if comp.tool == tool:
            raise ConfigurationError(
                f"compensation of {tool!r} refers to itself: field 'tool' must name a different "
                f"tool that undoes {tool!r}")
        if tool in self.read_only:
            raise ConfigurationError(f"{tool!r} is declared read-only and cannot have a compensation")
        if isinstance(comp.args, Mapping):
            for param, path in comp.args.items():
                if not isinstance(param, str) or not param:
                    raise ConfigurationError(
                        f"compensation of {tool!r}: args keys must be parameter names, got {param!r}")
                parse_path(path, tool=tool, param=param)
        self.pairs[tool] = comp
        self.version = next(_VERSIONS)  # again: a check made during the change is stale
        return comp

    def _coerce(self, tool: str, spec: CompensationSpec) -> Compensation:
        if isinstance(spec, Compensation):
            return spec
        if isinstance(spec, str):
            if not spec:
                raise ConfigurationError(f"compensation of {tool!r}: field 'tool' is empty")
            return Compensation(tool=spec)
        if isinstance(spec, Mapping):
            unknown = set(spec) - {"tool", "args", "retry"}
            if unknown:
                raise ConfigurationError(
                    f"compensation of {tool!r}: unknown field(s) {sorted(unknown)}; "
                    "expected 'tool', 'args', 'retry'")
            if not isinstance(spec.get("tool"), str) or not spec.get("tool"):
                raise ConfigurationError(
                    f"compensation of {tool!r}: field 'tool' must name the compensating tool, "
                    f"got {spec.get('tool')!r}")
            args = spec.get("args")
            if args is not None and not (isinstance(args, Mapping) or callable(args)):
                raise ConfigurationError(
                    f"compensation of {tool!r}: field 'args' must be a mapping of parameter -> "
                    f"path or a callable (args, result) -> dict, got {type(args).__name__}")
            try:
                return Compensation(**spec)
            except Exception as e:
                raise ConfigurationError(f"compensation of {tool!r}: {e}") from e
        raise ConfigurationError(
            f"compensation of {tool!r} must be a tool name, a rac.Compensation or a mapping, "
            f"got {type(spec).__name__}")

    def add_alternatives(self, tool: str, alternatives: Iterable[str]) -> None:
        """Declare tools to try, in order, when ``tool`` fails for good."""
        self._passed.clear()  # checks that passed may not pass any more
        self.version = next(_VERSIONS)
        if isinstance(alternatives, str):
            raise ConfigurationError(
                f"alternatives of {tool!r} must be a list of tool names, got the string "
                f"{alternatives!r} (write [{alternatives!r}])")
        alts = list(alternatives)
        for alt in alts:
            if not isinstance(alt, str) or not alt:
                raise ConfigurationError(f"alternatives of {tool!r}: {alt!r} is not a tool name")
            if alt == tool:
                raise ConfigurationError(f"alternatives of {tool!r} list {tool!r} itself")
        if len(set(alts)) != len(alts):
            raise ConfigurationError(f"alternatives of {tool!r} list a tool twice: {alts}")
        self.alternatives[tool] = alts
        self.version = next(_VERSIONS)  # again: a check made during the change is stale

    def add_read_only(self, tool: str) -> None:
        """Declare that ``tool`` has no side effect: it is never compensated."""
        self._passed.clear()  # checks that passed may not pass any more
        self.version = next(_VERSIONS)
        if tool in self.pairs:
            raise ConfigurationError(f"{tool!r} has a compensation and cannot be read-only")
        self.read_only.add(tool)
        self.version = next(_VERSIONS)  # again: a check made during the change is stale

    def referenced_tools(self) -> dict[str, str]:
        """Every tool name the declarations mention, with the field that mentions it."""
        refs: dict[str, str] = {}
        for tool, comp in self.pairs.items():
            refs.setdefault(tool, f"compensations[{tool!r}]")
            refs.setdefault(comp.tool, f"compensations[{tool!r}].tool")
        for tool, alts in self.alternatives.items():
            refs.setdefault(tool, f"alternatives[{tool!r}]")
            for alt in alts:
                refs.setdefault(alt, f"alternatives[{tool!r}]")
        return refs

    def check_known(self, known: Iterable[str], *, only_for: Iterable[str] | None = None) -> None:
        """Raise ConfigurationError if a declaration names a tool not in ``known``.

        With ``only_for``, check just the declarations whose subject is one of those tools (an
        adapter checks the tools of one agent against what it can call).
        """
        subjects = set(only_for) if only_for is not None else None
        if subjects is not None and subjects.isdisjoint(self.pairs) \
                and subjects.isdisjoint(self.alternatives):
            return  # nothing is declared about these tools
        known_set = set(known)
        # An adapter checks the same tools for every run it opens: a check that passed is
        # remembered (with the declarations' sizes, so a new declaration checks again).
        passed = (frozenset(subjects) if subjects is not None else None, frozenset(known_set),
                  len(self.pairs), len(self.alternatives))
        if passed in self._passed:
            return
        self._check(known_set, subjects)
        if len(self._passed) < 256:
            self._passed.add(passed)

    def _check(self, known_set: set[str], subjects: set[str] | None) -> None:
        for tool, comp in self.pairs.items():
            if subjects is not None and tool not in subjects:
                continue
            if subjects is None and tool not in known_set:
                raise ConfigurationError(f"compensations[{tool!r}]: unknown tool {tool!r} "
                                         f"(known tools: {sorted(known_set)})")
            if comp.tool not in known_set:
                raise ConfigurationError(
                    f"compensations[{tool!r}].tool: unknown compensating tool {comp.tool!r} "
                    f"(known tools: {sorted(known_set)}); register it with the engine or give it "
                    f"to the agent")
        for tool, alts in self.alternatives.items():
            if subjects is not None and tool not in subjects:
                continue
            for name in ([tool] if subjects is None else []) + alts:
                if name not in known_set:
                    raise ConfigurationError(f"alternatives[{tool!r}]: unknown tool {name!r} "
                                             f"(known tools: {sorted(known_set)})")
