"""Whether a tool a model names can be the undo of another: what RAC knows of it, and what its
name, description and MCP annotations say it does.

A model that names an undo only picks from the tools on offer; many of those are not undos at
all. Under every policy RAC refuses a proposed compensator that is itself an action with a
declared undo (``book_car`` as the undo of ``book_hotel``: it would make a new effect), an
alternative of another tool, a lookup, an irreversible tool, or a tool that destroys something
other than the call's effect (``delete_account``: a destructive verb on another object, a
destructive MCP annotation, or a description that speaks of all / every / the entire ...).

Under ``policy="auto"`` (used with nobody reviewing it) a compensator must also read as this
call's undo: an undoing verb in its name (``cancel``, ``void``, ``refund``, ...) and the
object of the call (``hotel`` for ``book_hotel``) in its name, description or parameters.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rac.engine import RAC
    from rac.tools import Tool

#: Verbs of a tool that undoes an effect.
UNDOING = frozenset({
    "cancel", "void", "refund", "revert", "reverse", "undo", "rollback", "release", "unbook",
    "delete", "remove", "return", "restore", "unreserve", "withdraw", "retract", "annul",
    "rescind", "unsubscribe", "deactivate", "disable", "detach", "unassign", "unregister",
    "revoke", "reimburse", "unlink", "unfollow", "unshare", "discard", "abort", "uninstall",
    "deprovision", "free", "credit", "decline", "close", "terminate", "destroy", "drop"})
#: Verbs that destroy what they name.
DESTRUCTIVE = frozenset({"delete", "remove", "destroy", "purge", "wipe", "drop", "erase",
                         "terminate", "close", "deactivate", "truncate", "reset", "clear",
                         "deprovision", "uninstall"})
#: Words in a destructive tool's description that reach beyond one effect.
_BROAD = frozenset({"all", "every", "entire", "everything", "permanently", "whole"})
#: Verbs of an action (left out of its object words).
_DOING = frozenset({
    "book", "create", "make", "add", "reserve", "charge", "send", "order", "purchase", "buy",
    "schedule", "open", "start", "subscribe", "register", "post", "place", "issue", "enable",
    "activate", "assign", "attach", "install", "provision", "insert", "update", "set",
    "transfer", "pay", "submit", "grant", "share", "follow", "link", "upload", "write", "save",
    "new", "do", "run", "put", "apply", "request", "hold", "rent", "hire", "sign", "enroll",
    "invite", "publish", "deploy", "launch", "allocate", "lock", "freeze", "change", "modify",
    "edit", "upsert", "increase", "decrease", "move", "copy", "get", "call", "trigger"})
_STOP = frozenset({"the", "and", "for", "with", "its", "given", "from", "this", "that", "one",
                   "tool", "call", "into", "your", "their", "our", "a", "an", "by", "of", "to",
                   "id", "ids"})
_WORDS = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+")


def words(text: str) -> list[str]:
    """The words of a name or a text, lower-cased, a plural ``s`` dropped (``book_hotel``,
    ``BookHotel`` and ``book-hotels`` give ``["book", "hotel"]``)."""
    out = []
    for w in _WORDS.findall(text or ""):
        w = w.lower()
        if len(w) > 3 and w.endswith("s") and not w.endswith("ss"):
            w = w[:-1]
        out.append(w)
    return out


def _object_words(name: str) -> set[str]:
    return {w for w in words(name) if w not in _DOING and w not in _STOP and len(w) > 1
            and not w.isdigit()}


def _about(tool: Tool | None, name: str) -> set[str]:
    """Every word a compensator says about itself: name, description, parameter names."""
    found = set(words(name))
    if tool is not None:
        found.update(words(tool.description))
        for p in tool.params or ():
            found.update(words(p))
    return found


def _destructive_hint(engine: RAC, name: str) -> bool:
    mcp = getattr(engine.extensions.get("rac.mcp"), "tools", None) or {}
    decl = getattr(mcp.get(name), "declaration", None)
    hints: Mapping[str, Any] = getattr(decl, "hints", None) or {}
    return hints.get("destructiveHint") is True


def unfit(engine: RAC, tool: str, name: str, tools: Mapping[str, Tool], *, auto: bool
          ) -> str | None:
    """Why ``name`` cannot be the undo of ``tool``, or None when it may be (see the module
    docstring); ``auto``: the stricter rule of ``policy="auto"``."""
    registry = engine.registry
    declared = registry.pairs.get(name)
    if declared is not None:
        return (f"{name!r} is itself an action with a declared undo ({declared.tool}): calling "
                "it would make a new effect, not undo one")
    for of, alts in registry.alternatives.items():
        if name in alts:
            return f"{name!r} is an alternative of {of!r}: an action, not an undo"
    if name in registry.alternatives:
        return f"{name!r} has alternatives declared: an action, not an undo"
    if any(lookup.tool == name for lookup in registry.lookups.values()):
        return f"{name!r} is a lookup (it reads whether an effect happened): it undoes nothing"
    if name in registry.irreversible:
        return f"{name!r} is declared irreversible: an effect of its own, not an undo"
    subject = _object_words(tool)
    about = _about(tools.get(name), name)
    related = bool(subject & about)
    verbs = set(words(name))
    description = set(words(tools[name].description)) if name in tools else set()
    destructive = bool(verbs & DESTRUCTIVE) or _destructive_hint(engine, name)
    if destructive and not related:
        return (f"{name!r} destroys something other than the effect of {tool!r} (nothing of "
                f"{sorted(subject) or [tool]} in its name, description or parameters)")
    if destructive and description & _BROAD:
        return (f"{name!r} destroys more than one effect (its description says "
                f"{sorted(description & _BROAD)})")
    if auto:
        if not verbs & UNDOING:
            return (f"under policy 'auto' an undo must say it undoes: {name!r} has no undoing "
                    "verb (cancel, void, refund, ...) in its name")
        if not related:
            return (f"under policy 'auto' an undo must name the call's object: nothing of "
                    f"{sorted(subject) or [tool]} in {name!r}'s name, description or "
                    "parameters")
    return None


__all__ = ["DESTRUCTIVE", "UNDOING", "unfit", "words"]
