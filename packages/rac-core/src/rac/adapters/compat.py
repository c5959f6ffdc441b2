"""An adapter's check, at its import, that the installed core is one it works with.

Each adapter distribution declares the range of the core it works with in its own metadata
(``robust-agent-compensation>=0.1.0,<0.2`` in its ``pyproject.toml``); :func:`require_core` reads
that declaration and the installed core's version, so the range is written once. A mismatch (an
installer told to ignore dependencies, a core upgraded on its own) fails the adapter's import
with one line naming both versions, instead of an ``AttributeError`` deep in a run.
"""

from __future__ import annotations

import re
from importlib import metadata

#: The core's distribution name (the import name is ``rac``).
CORE = "robust-agent-compensation"

_CLAUSE = re.compile(r"^\s*(~=|==|!=|<=|>=|<|>)\s*([0-9][0-9A-Za-z.*+!-]*)\s*$")


class CoreMismatch(ImportError):
    """The installed core is outside the range an adapter declares; the message says both."""


def require_core(adapter: str) -> None:
    """Raise :class:`CoreMismatch` unless the installed core satisfies what the distribution
    ``adapter`` declares. Nothing to check (returns) when ``adapter`` is not installed as a
    distribution (its sources on ``sys.path``) or declares no range."""
    try:
        declared = metadata.requires(adapter) or []
    except metadata.PackageNotFoundError:
        return
    spec = next((_specifier(r) for r in declared if _name(r) == CORE), None)
    if not spec:
        return
    try:
        installed = metadata.version(CORE)
    except metadata.PackageNotFoundError:
        raise CoreMismatch(
            f"{adapter} needs {CORE}{spec}, which is not installed (the 'rac' module found is "
            f"another project's); install the core from the same checkout as the adapter: "
            f"pip install ./packages/rac-core") from None
    if not satisfies(installed, spec):
        raise CoreMismatch(
            f"{adapter} {metadata.version(adapter)} works with {CORE}{spec}, but {CORE} "
            f"{installed} is installed; install both from the same checkout or release")


def satisfies(version: str, spec: str) -> bool:
    """Whether ``version`` meets every clause of ``spec`` (``>=0.1.0,<0.2``), comparing
    release numbers (``0.1.0rc1`` counts as ``0.1.0``); ``==0.1.*`` matches a prefix.

    Raises ValueError for a clause it cannot read."""
    have = _release(version)
    for clause in filter(None, (c.strip() for c in spec.split(","))):
        match = _CLAUSE.match(clause)
        if match is None:
            raise ValueError(f"cannot read the version clause {clause!r} of {spec!r}")
        op, text = match.groups()
        if text.endswith(".*") and op in ("==", "!="):
            prefix = _release(text[:-2])
            if (have[:len(prefix)] == prefix) != (op == "=="):
                return False
            continue
        want = _release(text)
        width = max(len(have), len(want))
        a, b = have + (0,) * (width - len(have)), want + (0,) * (width - len(want))
        ok = {"==": a == b, "!=": a != b, "<=": a <= b, ">=": a >= b, "<": a < b, ">": a > b,
              "~=": a >= b and have[:len(want) - 1] == want[:len(want) - 1]}[op]
        if not ok:
            return False
    return True


def _release(version: str) -> tuple[int, ...]:
    parts = re.match(r"^\s*v?(\d+(?:\.\d+)*)", version)
    if parts is None:
        raise ValueError(f"cannot read the version {version!r}")
    return tuple(int(p) for p in parts.group(1).split("."))


def _name(requirement: str) -> str:
    match = re.match(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)", requirement)
    return re.sub(r"[-_.]+", "-", match.group(1)).lower() if match else ""


def _specifier(requirement: str) -> str:
    """The version clauses of a requirement (``name[extra]>=1,<2; marker`` -> ``>=1,<2``)."""
    rest = requirement.split(";", 1)[0]
    rest = re.sub(r"^\s*[A-Za-z0-9][A-Za-z0-9._-]*\s*(\[[^\]]*\])?", "", rest)
    clauses = [c for c in rest.strip().strip("()").replace(" ", "").split(",") if c]
    # Lower bounds first, as people write ranges (metadata may store "<0.2,>=0.1.0").
    return ",".join(sorted(clauses, key=lambda c: not c.startswith(">")))
