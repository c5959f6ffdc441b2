"""What RAC knows about tools, validated when it is declared: compensation pairs (with their
argument mappings, reconciliation lookups and before-images), alternatives, effect classes,
irreversible tools and their policies, and which result fields a tool produces."""

from __future__ import annotations

import difflib
import functools
import itertools
from collections.abc import Callable, Iterable, Mapping
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, field_validator

from rac.errors import ConfigurationError
from rac.retry import RetryPolicy

ArgsMapper = Callable[[dict[str, Any], Any], Mapping[str, Any]]
#: Where a compensation argument may come from: the original call's ``result`` and ``args``,
#: and the ``before`` image read right before it ran.
_PATH_ROOTS = ("result", "args", "before")
#: Where a lookup or before-image argument may come from: the original call's ``args`` and its
#: idempotency ``key``.
_LOOKUP_ROOTS = ("args", "key")


class Effect(StrEnum):
    """What calling a tool again does to the world: the basis of RAC's retry decisions.

    ``read_only``: nothing (never compensated, always safe to retry). ``idempotent``: a
    repeat has no further effect. ``keyed``: the tool accepts an idempotency key and RAC
    passes its per-step key, so a repeat with the same key is deduplicated by the tool.
    ``unsafe``: a repeat may do it twice (the default for a side-effecting tool).
    """

    READ_ONLY = "read_only"
    IDEMPOTENT = "idempotent"
    KEYED = "keyed"
    UNSAFE = "unsafe"


class Irreversible(StrEnum):
    """What RAC does with a tool that has no undo (send an email, ship a parcel).

    ``run``: run it and name it in any report as not undoable. ``refuse``: refuse the call
    before it runs. ``approve``: ask ``rac_approve_action`` first; a denied or pending approval
    refuses the call and says so.
    """

    RUN = "run"
    REFUSE = "refuse"
    APPROVE = "approve"


class Lookup(BaseModel):
    """How to find out whether a call that may have happened did (reconciliation).

    ``tool`` is a read-only tool; ``args`` maps its parameters to paths into the original
    call's arguments or idempotency key (``"args.user_id"``, ``"key"``). ``items`` is the path
    to the list of candidates in the lookup's result (``"result.reservations"``; default: the
    result itself, a list or one object). An item matches when every field named in ``match``
    equals the value at its path (``{"flight_number": "args.flight_number"}``); with no
    ``match`` any item does. The match that is the call's own effect is taken as its result.

    Only evidence makes a match the call's own: a lookup that matches on the idempotency key
    the call was sent with (``{"request_key": "key"}``) needs nothing more; otherwise RAC must
    tell it from what existed before the call, by the item field ``created_after`` names (its
    creation time, epoch seconds or ISO 8601, compared with the intent's time on the engine's
    clock, items made within ``clock_skew`` seconds before it being too close to tell) or, by
    default, by a snapshot of the matches taken right before the call (one more call of the
    lookup tool). Another call's known effect, an item RAC cannot read, and a possible effect
    of a sibling still in doubt are never credited to the call (see :mod:`rac.run.reconcile`).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    tool: str
    args: Mapping[str, str] = {}
    items: str | None = None
    match: Mapping[str, str] = {}
    created_after: str | None = None
    clock_skew: float = 5.0

    def __init__(self, tool: str | None = None, /, **data: Any) -> None:
        if tool is not None:
            data["tool"] = tool
        super().__init__(**data)


class BeforeImage(BaseModel):
    """A read made right before an action, whose result undoes it: ``tool`` is called with
    ``args`` mapped from the action's arguments (``{"reservation_id": "args.reservation_id"}``)
    and its result is written durably with the action's intent. Compensation arguments may
    then refer to it (``"before.total_baggages"``), and a tool may be its own compensator.

    ``on_failure`` says what happens when the read fails: ``"refuse"`` the action (default),
    or ``"run"`` it marked not undoable.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    tool: str
    args: Mapping[str, str] = {}
    on_failure: str = "refuse"

    def __init__(self, tool: str | None = None, /, **data: Any) -> None:
        if tool is not None:
            data["tool"] = tool
        super().__init__(**data)
#: Versions of declarations, shared by every registry of the process (see ``version``)
_VERSIONS = itertools.count(1)


class Compensation(BaseModel):
    """How to undo a tool: the compensating tool and how its arguments are built.

    ``args`` is either a mapping of compensator parameter -> path into the original call
    (``"result.booking_id"``, ``"args.passenger_id"``, ``"result"`` for the whole result,
    ``"before.total_baggages"`` for the before-image), or a callable ``(args, result) -> dict``,
    or None to match the compensator's parameter names against the result's fields and then the
    original arguments. ``retry`` overrides the engine's compensation retry policy for this
    pair. ``lookup`` reconciles a call that may have happened (see :class:`Lookup`);
    ``before`` reads the state the action changes, so that it can be restored (see
    :class:`BeforeImage`). ``optional`` names the compensator parameters that may be filled
    from an empty field (None, ``""``, a path that is missing): RAC never calls a compensator
    with any other parameter empty (it would undo nothing). ``already_undone`` names the
    compensator's answers that mean the effect is already undone (a cancel answering "already
    cancelled"): exception classes (``rac.ResultError`` for error results), or a callable
    ``(error) -> bool``; such an answer counts as the undo done. The tool may be given
    positionally: ``Compensation("cancel_x")``.

    A compensator has an effect class too (``effects=``; see :class:`Effect`): a failure that
    may have taken effect (a timeout after the refund was paid) is retried only when a repeat
    is safe (``idempotent``, or ``keyed``: RAC passes it the compensation's own key); for an
    ``unsafe`` one (the default), its own lookup (``lookups={compensator: Lookup(...)}``)
    decides, and without one, or when it cannot tell, the action is named, never reported
    undone.
    """

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    tool: str
    args: Mapping[str, str] | ArgsMapper | None = None
    retry: RetryPolicy | None = None
    lookup: Lookup | None = None
    before: BeforeImage | None = None
    #: compensator parameters that may be filled from an empty field (None, "", missing):
    #: any other is refused, and the action stays live and named
    optional: tuple[str, ...] = ()
    #: answers of the compensator that mean "already undone": exception classes, or a
    #: callable (error) -> bool
    already_undone: tuple[type[BaseException], ...] | Callable[[BaseException], bool] = ()

    def __init__(self, tool: str | None = None, /, **data: Any) -> None:
        if tool is not None:
            data["tool"] = tool
        super().__init__(**data)

    @field_validator("already_undone", mode="before")
    @classmethod
    def _one_class(cls, value: Any) -> Any:
        """One exception class stands for itself (a class is callable, but not a predicate);
        anything but exception classes or a callable is refused, saying what is expected."""
        if isinstance(value, type):
            value = (value,)
        if isinstance(value, list):
            value = tuple(value)
        if not (isinstance(value, tuple) and all(
                isinstance(t, type) and issubclass(t, BaseException) for t in value)) \
                and (isinstance(value, tuple) or not callable(value)):
            raise ValueError(f"already_undone must be exception classes (e.g. "
                             f"(AlreadyCancelled, rac.ResultError)) or a callable "
                             f"(error) -> bool, got {value!r}")
        return value

    def undone_by(self, error: BaseException) -> bool:
        """True if ``error`` (the compensator's failure) is an answer declared to mean the
        effect is already undone (see ``already_undone``)."""
        spec = self.already_undone
        if isinstance(spec, tuple):
            return bool(spec) and isinstance(error, spec)
        return spec(error) is True


CompensationSpec = str | Compensation | Mapping[str, Any]


def _model(cls: Any, data: Mapping[str, Any], where: str) -> Any:
    """``cls(**data)``, a ConfigurationError naming ``where`` and the field if it is wrong."""
    try:
        return cls(**data)
    except ConfigurationError:
        raise
    except Exception as e:
        errors = getattr(e, "errors", None)
        if callable(errors):
            parts = [f"field {'.'.join(map(str, err.get('loc', ())))!r}: {err.get('msg')}"
                     for err in errors()]
            raise ConfigurationError(f"{where}: {'; '.join(parts)}") from None
        raise ConfigurationError(f"{where}: {e}") from e


def parse_path(path: str, *, tool: str, param: str,
               roots: tuple[str, ...] = _PATH_ROOTS) -> tuple[str, tuple[str, ...]]:
    """Split ``"result.a.b"`` into ``("result", ("a", "b"))``; raise a ConfigurationError naming
    the tool and parameter when the path is malformed or starts anywhere but ``roots``."""
    if not isinstance(path, str):
        raise ConfigurationError(
            f"compensation of {tool!r}: args[{param!r}] must be a path such as "
            f"'result.booking_id' or 'args.passenger_id', got {path!r}")
    return _parse_path(path, tool, param, roots)


@functools.lru_cache(maxsize=1024)
def _parse_path(path: str, tool: str, param: str,
                roots: tuple[str, ...] = _PATH_ROOTS) -> tuple[str, tuple[str, ...]]:
    if not path.strip():
        raise ConfigurationError(
            f"compensation of {tool!r}: args[{param!r}] must be a path such as "
            f"'result.booking_id' or 'args.passenger_id', got {path!r}")
    parts = tuple(path.strip().split("."))
    if parts[0] not in roots or any(not p for p in parts):
        raise ConfigurationError(
            f"compensation of {tool!r}: args[{param!r}] = {path!r} must start with "
            f"{' or '.join(repr(r) for r in roots)} and name fields separated by dots "
            f"(e.g. {roots[0] + '.booking_id'!r})")
    return parts[0], parts[1:]


#: How close (difflib's ratio) a declared name that is no tool must be to a known tool to be
#: taken for a misspelling of it.
TYPO_CUTOFF = 0.85


def did_you_mean(name: str, known: Iterable[str]) -> str:
    """`` (did you mean 'x'?)`` naming the known name closest to ``name``, or ``""``."""
    close = difflib.get_close_matches(name, sorted(known), n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


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
        #: tool -> its declared effect class (undeclared: worked out per call, see effect_of)
        self.effects: dict[str, Effect] = {}
        #: tool -> what to do with it: it has no undo
        self.irreversible: dict[str, Irreversible] = {}
        #: tool -> the lookup that reconciles its calls (also from its Compensation.lookup)
        self.lookups: dict[str, Lookup] = {}
        #: tool -> the result fields whose values it produces (narrows dependency inference;
        #: an empty list turns it off for the tool)
        self.produces: dict[str, tuple[str, ...]] = {}
        #: tool (None: every tool) -> exception types it raises only before any effect
        self.errors_before_effect: dict[str | None, tuple[type[BaseException], ...]] = {}
        #: the parameter through which keyed tools take RAC's key (the engine's key_param)
        self.key_param = "idempotency_key"
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
        if comp.tool == tool and comp.before is None:
            raise ConfigurationError(
                f"compensation of {tool!r} refers to itself: field 'tool' must name a different "
                f"tool that undoes {tool!r}, or declare before=rac.BeforeImage(...) so that "
                f"calling {tool!r} again with the previous values undoes it")
        if tool in self.read_only:
            raise ConfigurationError(f"{tool!r} is declared read-only and cannot have a compensation")
        if tool in self.irreversible:
            raise ConfigurationError(f"{tool!r} is declared irreversible and cannot have a "
                                     "compensation")
        if isinstance(comp.args, Mapping):
            for param, path in comp.args.items():
                if not isinstance(param, str) or not param:
                    raise ConfigurationError(
                        f"compensation of {tool!r}: args keys must be parameter names, got {param!r}")
                root, _ = parse_path(path, tool=tool, param=param)
                if root == "before" and comp.before is None:
                    raise ConfigurationError(
                        f"compensation of {tool!r}: args[{param!r}] = {path!r} reads the "
                        "before-image, but no before=rac.BeforeImage(...) is declared")
        if isinstance(comp.optional, str) or not all(
                isinstance(p, str) and p for p in comp.optional):
            raise ConfigurationError(f"compensation of {tool!r}: optional must be a list of "
                                     f"compensator parameter names, got {comp.optional!r}")
        for label, decl in (("lookup", comp.lookup), ("before", comp.before)):
            if decl is not None:
                self._not_the_action(tool, decl.tool, f"compensations[{tool!r}].{label}")
                for param, path in decl.args.items():
                    parse_path(path, tool=f"{tool}.{label}", param=param, roots=_LOOKUP_ROOTS)
        if comp.lookup is not None:
            self._check_lookup(tool, comp.lookup)
            self.lookups[tool] = comp.lookup
        self.pairs[tool] = comp
        self.version = next(_VERSIONS)  # again: a check made during the change is stale
        return comp

    @staticmethod
    def _not_the_action(tool: str, read: str, where: str) -> None:
        """A lookup or before-image is a read of the world: never the action it reads for."""
        if read == tool:
            raise ConfigurationError(
                f"{where}.tool names {tool!r} itself: a lookup or before-image must be a "
                f"read-only tool that reads what {tool!r} changes (RAC calls it outside the "
                "log), never the action")

    def _side_effects(self, name: str) -> str | None:
        """Why ``name`` is declared to change the world (None if nothing says so)."""
        if name in self.pairs:
            return "it has a compensation"
        if name in self.irreversible:
            return "it is declared irreversible"
        effect = self.effects.get(name)
        if effect is not None and effect is not Effect.READ_ONLY:
            return f"its effect class is {effect.value!r}"
        return None

    @staticmethod
    def _check_lookup(tool: str, lookup: Lookup) -> None:
        if lookup.created_after is not None and not (
                isinstance(lookup.created_after, str) and lookup.created_after.strip()):
            raise ConfigurationError(f"lookup of {tool!r}: created_after must name the item "
                                     f"field holding its creation time, got "
                                     f"{lookup.created_after!r}")
        if lookup.clock_skew < 0:
            raise ConfigurationError(f"lookup of {tool!r}: clock_skew must be >= 0 seconds, "
                                     f"got {lookup.clock_skew!r}")
        if lookup.items is not None:
            parse_path(lookup.items, tool=f"{tool}.lookup", param="items", roots=("result",))
        for field_name, path in lookup.match.items():
            parse_path(path, tool=f"{tool}.lookup", param=f"match[{field_name!r}]",
                       roots=_LOOKUP_ROOTS)

    def add_lookup(self, tool: str, lookup: Lookup | Mapping[str, Any]) -> None:
        """Declare how calls of ``tool`` that may have happened are reconciled."""
        decl: Lookup = lookup if isinstance(lookup, Lookup) else \
            _model(Lookup, lookup, f"lookup of {tool!r}")
        self._not_the_action(tool, decl.tool, f"lookups[{tool!r}]")
        for param, path in decl.args.items():
            parse_path(path, tool=f"{tool}.lookup", param=param, roots=_LOOKUP_ROOTS)
        self._check_lookup(tool, decl)
        self._changed()
        self.lookups[tool] = decl
        self._changed()

    def set_effect(self, tool: str, effect: Effect | str) -> None:
        """Declare ``tool``'s effect class (``read_only`` also makes it read-only)."""
        try:
            value = Effect(effect)
        except ValueError:
            raise ConfigurationError(
                f"effects[{tool!r}]: {effect!r} is not an effect class; use one of "
                f"{[e.value for e in Effect]}") from None
        if value is Effect.READ_ONLY:
            self.add_read_only(tool)
        elif tool in self.read_only:
            raise ConfigurationError(f"effects[{tool!r}] = {value.value!r}, but {tool!r} is "
                                     "declared read-only")
        self._changed()
        self.effects[tool] = value
        self._changed()

    def set_irreversible(self, tool: str, policy: Irreversible | str = Irreversible.RUN) -> None:
        """Declare that ``tool`` has no undo, and what RAC does before calling it."""
        try:
            value = Irreversible(policy)
        except ValueError:
            raise ConfigurationError(
                f"irreversible[{tool!r}]: {policy!r} is not a policy; use one of "
                f"{[p.value for p in Irreversible]}") from None
        if tool in self.pairs:
            raise ConfigurationError(f"{tool!r} has a compensation and cannot be irreversible")
        if tool in self.read_only:
            raise ConfigurationError(f"{tool!r} is read-only and cannot be irreversible")
        self._changed()
        self.irreversible[tool] = value
        self._changed()

    def set_produces(self, tool: str, fields: Iterable[str]) -> None:
        """Declare the result fields whose values ``tool`` produces: only they make later
        calls depend on it (an empty list: no inferred dependency on it)."""
        if isinstance(fields, str):
            raise ConfigurationError(f"produces[{tool!r}] must be a list of result fields, got "
                                     f"the string {fields!r} (write [{fields!r}])")
        names = tuple(fields)
        if not all(isinstance(f, str) and f for f in names):
            raise ConfigurationError(f"produces[{tool!r}]: {names!r} must be field names")
        self._changed()
        self.produces[tool] = names
        self._changed()

    def declare_errors_before_effect(self, tool: str | None,
                                     types: Iterable[type[BaseException]]) -> None:
        """Declare that ``tool`` (None: every tool) raises exceptions of ``types`` only before
        it has had any effect: such a failure is taken as a call that did not happen.
        ``rac.ResultError`` among them says the same of the tool's error results."""
        where = "errors_before_effect" if tool is None else f"errors_before_effect[{tool!r}]"
        found: tuple[Any, ...] = (types,) if isinstance(types, type | str | bytes) \
            else tuple(types)
        for t in found:
            if not (isinstance(t, type) and issubclass(t, BaseException)):
                raise ConfigurationError(f"{where}: {t!r} is not an exception class (write "
                                         "e.g. (ValueError, rac.ResultError))")
        self._changed()
        self.errors_before_effect[tool] = tuple(dict.fromkeys(
            [*self.errors_before_effect.get(tool, ()), *found]))
        self._changed()

    def before_effect_types(self, tool: str) -> tuple[type[BaseException], ...]:
        """The exception types declared to come before any effect of ``tool`` (its own and
        every tool's)."""
        found = self.errors_before_effect
        if not found:
            return ()
        return found.get(None, ()) + found.get(tool, ())

    def effect_of(self, tool: str, params: Iterable[str] | None,
                  key_param: str = "idempotency_key") -> Effect:
        """``tool``'s effect class: declared, else read-only if declared so, else ``keyed`` when
        it takes ``key_param``, else ``unsafe``. A tool declared ``keyed`` whose parameters are
        known and lack ``key_param`` is ``unsafe``: RAC cannot pass it a key (the declaration
        is refused as soon as its parameters are known, see :meth:`check_params`)."""
        declared = self.effects.get(tool)
        if declared is not None:
            if declared is Effect.KEYED and params is not None and key_param not in params:
                return Effect.UNSAFE
            return declared
        if tool in self.read_only:
            return Effect.READ_ONLY
        if params is not None and key_param in params:
            return Effect.KEYED
        return Effect.UNSAFE

    def _changed(self) -> None:
        self._passed.clear()  # checks that passed may not pass any more
        self.version = next(_VERSIONS)

    def _coerce(self, tool: str, spec: CompensationSpec) -> Compensation:
        if isinstance(spec, Compensation):
            return spec
        if isinstance(spec, str):
            if not spec:
                raise ConfigurationError(f"compensation of {tool!r}: field 'tool' is empty")
            return Compensation(tool=spec)
        if isinstance(spec, Mapping):
            fields = ("tool", "args", "retry", "lookup", "before", "optional",
                      "already_undone")
            unknown = set(spec) - set(fields)
            if unknown:
                raise ConfigurationError(
                    f"compensation of {tool!r}: unknown field(s) {sorted(unknown)}; "
                    f"expected {', '.join(repr(f) for f in fields)}")
            if not isinstance(spec.get("tool"), str) or not spec.get("tool"):
                raise ConfigurationError(
                    f"compensation of {tool!r}: field 'tool' must name the compensating tool, "
                    f"got {spec.get('tool')!r}")
            args = spec.get("args")
            if args is not None and not (isinstance(args, Mapping) or callable(args)):
                raise ConfigurationError(
                    f"compensation of {tool!r}: field 'args' must be a mapping of parameter -> "
                    f"path or a callable (args, result) -> dict, got {type(args).__name__}")
            data = dict(spec)
            if isinstance(data.get("lookup"), Mapping):
                data["lookup"] = _model(Lookup, data["lookup"], f"compensation of {tool!r}: lookup")
            if isinstance(data.get("before"), Mapping):
                data["before"] = _model(BeforeImage, data["before"],
                                        f"compensation of {tool!r}: before")
            comp: Compensation = _model(Compensation, data, f"compensation of {tool!r}")
            return comp
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
            if comp.before is not None:
                refs.setdefault(comp.before.tool, f"compensations[{tool!r}].before.tool")
        for tool, lookup in self.lookups.items():
            refs.setdefault(lookup.tool, f"lookups[{tool!r}].tool")
        for tool, alts in self.alternatives.items():
            refs.setdefault(tool, f"alternatives[{tool!r}]")
            for alt in alts:
                refs.setdefault(alt, f"alternatives[{tool!r}]")
        return refs

    def check_params(self, tools: Mapping[str, Any]) -> None:
        """Raise ConfigurationError if a declared mapping names a parameter its tool does not
        have (a typo), for the tools in ``tools`` (name -> rac.Tool) whose parameters are known."""
        def check(where: str, target: str, keys: Iterable[str]) -> None:
            tool = tools.get(target)
            params = getattr(tool, "params", None)
            if params is None:
                return
            for key in keys:
                if key not in params:
                    raise ConfigurationError(
                        f"{where}: {target!r} has no parameter {key!r}"
                        f"{did_you_mean(key, params)} (its parameters: {sorted(params)})")
        for name, comp in self.pairs.items():
            if isinstance(comp.args, Mapping):
                check(f"compensations[{name!r}].args", comp.tool, comp.args)
            if comp.before is not None:
                check(f"compensations[{name!r}].before.args", comp.before.tool, comp.before.args)
        for name, lookup in self.lookups.items():
            check(f"lookups[{name!r}].args", lookup.tool, lookup.args)
        for name, comp in self.pairs.items():
            check(f"compensations[{name!r}].optional", comp.tool, comp.optional)
        for name, effect in self.effects.items():
            params = getattr(tools.get(name), "params", None)
            if effect is Effect.KEYED and params is not None and self.key_param not in params:
                raise ConfigurationError(
                    f"effects[{name!r}] = 'keyed', but {name!r} has no parameter "
                    f"{self.key_param!r} (its parameters: {sorted(params)}): RAC could not "
                    f"pass it a key, so a repeat would not be deduplicated. Declare it "
                    f"'idempotent' or 'unsafe', or set key_param= to the parameter it takes")

    def check_known(self, known: Iterable[str], *, only_for: Iterable[str] | None = None) -> None:
        """Raise ConfigurationError if a declaration names a tool not in ``known`` (with the
        known name it is closest to: a typo in ``irreversible=`` would leave the real tool
        running freely), or a lookup or before-image that is not a read-only tool.

        With ``only_for``, check just the declarations whose subject is one of those tools (an
        adapter checks the tools of one agent against what it can call): the names of other
        declarations cannot be checked then.
        """
        subjects = set(only_for) if only_for is not None else None
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

    def _unknown(self, where: str, name: str, known_set: set[str], what: str = "tool") -> str:
        return (f"{where}: unknown {what} {name!r}{did_you_mean(name, known_set)} (known tools: "
                f"{sorted(known_set)})")

    def _check(self, known_set: set[str], subjects: set[str] | None) -> None:
        for tool, comp in self.pairs.items():
            if subjects is not None and tool not in subjects:
                continue
            if subjects is None and tool not in known_set:
                raise ConfigurationError(self._unknown(f"compensations[{tool!r}]", tool,
                                                       known_set))
            if comp.tool not in known_set:
                raise ConfigurationError(
                    self._unknown(f"compensations[{tool!r}].tool", comp.tool, known_set,
                                  "compensating tool")
                    + "; register it with the engine or give it to the agent")
            for label, decl in (("before", comp.before), ("lookup", comp.lookup)):
                if decl is not None:
                    self._check_read(f"compensations[{tool!r}].{label}.tool", decl.tool,
                                     known_set)
        for tool, lookup in self.lookups.items():
            if subjects is not None and tool not in subjects:
                continue
            if subjects is None and tool not in known_set:
                raise ConfigurationError(self._unknown(f"lookups[{tool!r}]", tool, known_set))
            self._check_read(f"lookups[{tool!r}].tool", lookup.tool, known_set)
        for tool, alts in self.alternatives.items():
            if subjects is not None and tool not in subjects:
                continue
            for name in ([tool] if subjects is None else []) + alts:
                if name not in known_set:
                    raise ConfigurationError(self._unknown(f"alternatives[{tool!r}]", name,
                                                           known_set))
        # A declared name that is no known tool but nearly one is a typo: the tool it meant
        # would run under no declaration (irreversible={"send_mial": "refuse"} leaves
        # send_mail running freely). A name far from every known tool may be a tool given
        # later (to a run, or to one call), and is left alone.
        named: list[tuple[str, Iterable[str | None]]] = [
            ("effects", self.effects), ("irreversible", self.irreversible),
            ("lookups", self.lookups), ("produces", self.produces),
            ("errors_before_effect", self.errors_before_effect),
            ("compensations", self.pairs), ("alternatives", self.alternatives)]
        for label, names in named:
            declared = {n for n in names if n is not None}
            for name in sorted(declared - known_set):
                close = difflib.get_close_matches(name, sorted(known_set - declared), n=1,
                                                  cutoff=TYPO_CUTOFF)
                if close:
                    raise ConfigurationError(
                        f"{label}[{name!r}]: no tool is called {name!r}; did you mean "
                        f"{close[0]!r}? (a declaration for a misspelt name leaves "
                        f"{close[0]!r} without it)")

    def _check_read(self, where: str, name: str, known_set: set[str]) -> None:
        """A lookup or before-image names a known tool that has no side effect."""
        if name not in known_set:
            raise ConfigurationError(self._unknown(where, name, known_set))
        why = self._side_effects(name)
        if why is not None:
            raise ConfigurationError(
                f"{where}: {name!r} changes the world ({why}), and RAC calls a lookup or "
                "before-image outside the log, never undone: name a read-only tool")
