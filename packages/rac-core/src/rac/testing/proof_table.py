"""The one-look table of a :class:`rac.testing.proof.Proof`."""

from __future__ import annotations

import textwrap
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rac.testing.proof import Proof

_WIDTHS = (34, 11, 46, 34)


def _wrap(text: str, width: int) -> list[str]:
    return textwrap.wrap(text, width, break_long_words=True, break_on_hyphens=False) or [""]


def proof_table(proof: Proof) -> str:
    """Per point: what was injected, the verdict, what RAC did, what the check found; then the
    compensators that did nothing, the skipped points and a one-line summary."""
    headers = ("point", "verdict", "RAC did", "check found")
    rows = [headers, tuple("-" * w for w in _WIDTHS)]
    lines: list[str] = []
    for header in rows:
        lines.append("  ".join(c.ljust(w) for c, w in zip(header, _WIDTHS, strict=True))
                     .rstrip())
    for r in proof.results:
        found = "-" if r.found is None else str(r.found)
        if r.note:
            found = f"{found} ({r.note})"
        cells = [_wrap(r.point.name, _WIDTHS[0]), _wrap(r.verdict, _WIDTHS[1]),
                 _wrap(r.did, _WIDTHS[2]), _wrap(found, _WIDTHS[3])]
        for i in range(max(len(c) for c in cells)):
            lines.append("  ".join((c[i] if i < len(c) else "").ljust(w)
                                   for c, w in zip(cells, _WIDTHS, strict=True)).rstrip())
    if proof.did_nothing:
        lines.append("")
        lines.append("COMPENSATOR DID NOTHING:")
        lines.extend(f"  - {d}" for d in proof.did_nothing)
    if proof.skipped or proof.notes:
        lines.append("")
        lines.extend(f"SKIPPED {s}" for s in proof.skipped)
        lines.extend(f"note: {n}" for n in proof.notes)
    counts: dict[str, int] = {}
    for r in proof.results:
        counts[r.verdict] = counts.get(r.verdict, 0) + 1
    summary = ", ".join(f"{n} {v}" for v, n in counts.items())
    lines.append("")
    calls = ", ".join(str(c) for c in proof.calls)
    lines.append(f"{len(proof.results)} points over {len(proof.calls)} calls ({calls}): "
                 f"{summary}.")
    if proof.false_clean or proof.did_nothing:
        lines.append("FAILED: the world was not back where RAC (or the finished run) said all "
                     "was well. Fix the pairs, mappings and keys named above.")
    elif proof.errors or proof.skipped:
        lines.append("NOT PROVED: some points were never reached, could not be judged, or were "
                     "skipped (see above); nothing can be said of them.")
    elif proof.named:
        lines.append("Every rollback was honest, but some effects stayed live (named above): a "
                     "lookup, an idempotency key or a pair would let RAC undo them.")
    else:
        lines.append("No false all-clear: wherever RAC said the world was back, it was; what "
                     "stayed live was named.")
    return "\n".join(lines)


__all__ = ["proof_table"]
