"""How far RAC believes what an MCP server says about its tools.

The MCP specification calls annotations hints that a client must treat as untrusted unless the
server is trusted. RAC applies that to everything a server says: from a server the user has not
marked trusted, a declaration can only make RAC more careful.

=====================================  ============================  ==========================
What the server says                   untrusted (the default)       trusted
=====================================  ============================  ==========================
a compensation, lookup, before-image   used (validated against the   used
                                       server's own tools)
``readOnlyHint: true`` or              "claims read-only": logged    read-only (never
``effect: "read_only"``                with a warning, the tool      compensated)
                                       stays protected (a side
                                       effect with no compensator)
``idempotentHint: true``, ``effect:    ignored (RAC's default for    that effect class
"idempotent"`` or ``"keyed"``          the tool applies)
``effect: "unsafe"``,                  used                          used
``irreversible: true``
``errors_before_effect: true``         ignored (an error result may  error results are taken as
                                       have come after an effect)    calls that did not happen
``destructiveHint: false``             never drops a compensation    never drops a compensation
=====================================  ============================  ==========================
"""

from __future__ import annotations

from dataclasses import dataclass

from rac.mcp.declarations import ToolDeclaration


@dataclass(frozen=True)
class TrustVerdict:
    """What RAC takes from one tool's declaration.

    ``read_only`` is True only for a trusted read-only claim. ``effect`` is the effect class
    RAC applies (None: RAC's default). ``errors_before_effect`` is True only for a trusted
    claim that the tool's error results come before any effect. ``claims_read_only`` marks an untrusted read-only claim
    that RAC did not follow; ``ignored`` lists the other claims it did not follow.
    """

    read_only: bool = False
    effect: str | None = None
    claims_read_only: bool = False
    ignored: tuple[str, ...] = ()
    #: the tool's error results are taken as coming before any effect (a trusted claim)
    errors_before_effect: bool = False


def judge(decl: ToolDeclaration, *, trusted: bool) -> TrustVerdict:
    """The verdict on ``decl`` from a server that is (or is not) ``trusted``."""
    hints = decl.hints
    says_read_only = decl.effect == "read_only" or (
        decl.effect is None and hints.get("readOnlyHint") is True)
    if decl.compensator is not None or decl.irreversible:
        # A tool with an undo or declared irreversible has side effects, whatever a hint says.
        says_read_only = decl.effect == "read_only"
    claimed = decl.effect
    if claimed is None and hints.get("idempotentHint") is True and not says_read_only:
        claimed = "idempotent"
    if trusted:
        if says_read_only:
            return TrustVerdict(read_only=True, effect="read_only")
        return TrustVerdict(effect=claimed if claimed != "read_only" else None,
                            errors_before_effect=decl.errors_before_effect)
    ignored: list[str] = []
    if decl.errors_before_effect:
        ignored.append("errors_before_effect")
    if says_read_only:
        ignored.append("readOnlyHint" if decl.effect is None else "effect: read_only")
    if claimed in ("idempotent", "keyed"):
        ignored.append("idempotentHint" if decl.effect is None else f"effect: {claimed}")
    return TrustVerdict(effect="unsafe" if claimed == "unsafe" else None,
                        claims_read_only=says_read_only, ignored=tuple(ignored))
