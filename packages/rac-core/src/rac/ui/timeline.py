"""A run drawn as a picture (SVG, no script, no external file): one row per action in the order
it was called, coloured by where it stands, with its attempts, the alternative it stood in
for, the compensation that undid it (or failed to) to its right, and the dependency edges
between actions on the left ("undo this before that")."""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

from rac.models import Record, RecordKind, RecordStatus

R = RecordStatus
#: fill colour per status (what an operator must look at is warm)
COLOURS = {
    R.COMPLETED: "#2e7d32", R.COMPENSATED: "#607d8b", R.COMPENSATING: "#f9a825",
    R.FAILED: "#9e9e9e", R.PENDING: "#ef6c00", R.IN_DOUBT: "#ef6c00",
    R.COMPENSATION_FAILED: "#c62828", R.RESOLVED: "#5e35b1",
}
_ROW, _TOP, _LEFT, _BOX, _GAP = 34, 34, 70, 250, 90


def _box(x: int, y: int, width: int, fill: str, label: str, title: str) -> str:
    return (f'<g><title>{escape(title)}</title>'
            f'<rect x="{x}" y="{y}" width="{width}" height="24" rx="5" fill="{fill}"/>'
            f'<text x="{x + 8}" y="{y + 16}" fill="#fff" font-size="12">{escape(label)}</text>'
            "</g>")


def timeline_svg(records: Sequence[Record]) -> str:
    """The run's records as an SVG element (``<svg ...>...</svg>``)."""
    actions = sorted((r for r in records if r.kind is RecordKind.ACTION), key=lambda r: r.seq)
    undos: dict[int, list[Record]] = {}
    for r in records:
        if r.kind is RecordKind.COMPENSATION and r.compensates is not None:
            undos.setdefault(r.compensates, []).append(r)
    row_of = {r.seq: i for i, r in enumerate(actions)}
    width = _LEFT + _BOX + _GAP + _BOX + 20
    height = _TOP + _ROW * max(len(actions), 1) + 10
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" class="timeline" width="{width}" '
             f'height="{height}" viewBox="0 0 {width} {height}" role="img" '
             f'aria-label="timeline of {len(actions)} calls" font-family="sans-serif">',
             f'<text x="{_LEFT}" y="18" font-size="12" fill="#444">calls, in order</text>',
             f'<text x="{_LEFT + _BOX + _GAP}" y="18" font-size="12" fill="#444">'
             "what undid them</text>",
             '<defs><marker id="arrow" markerWidth="8" markerHeight="8" refX="7" refY="4" '
             'orient="auto"><path d="M0,0 L8,4 L0,8 z" fill="#555"/></marker></defs>']
    for i, rec in enumerate(actions):
        y = _TOP + i * _ROW
        label = f"#{rec.seq} {rec.tool}"
        if rec.attempts > 1:
            label += f" ×{rec.attempts}"
        if rec.read_only:
            label += " (read)"
        fill = "#bdbdbd" if rec.read_only else COLOURS.get(rec.status, "#9e9e9e")
        title = f"#{rec.seq} {rec.tool}: {rec.status}" + (f" ({rec.error})" if rec.error else "")
        parts.append(_box(_LEFT, y, _BOX, fill, label[:36], title))
        if rec.alternative_of is not None and rec.alternative_of in row_of:
            parts.append(f'<text x="{_LEFT - 6}" y="{y + 16}" font-size="11" text-anchor="end" '
                         f'fill="#555">alt of #{rec.alternative_of}</text>')
        for j, undo in enumerate(undos.get(rec.seq, [])):
            x = _LEFT + _BOX + _GAP + j * 12
            parts.append(f'<line x1="{_LEFT + _BOX}" y1="{y + 12}" x2="{x - 4}" y2="{y + 12}" '
                         'stroke="#555" marker-end="url(#arrow)"/>')
            fill = {R.COMPLETED: "#607d8b", R.FAILED: "#c62828"}.get(undo.status, "#f9a825")
            utitle = f"#{undo.seq} {undo.tool} undoing #{rec.seq}: {undo.status}" + (
                f" ({undo.error})" if undo.error else "")
            parts.append(_box(x, y, _BOX - j * 12, fill, f"#{undo.seq} {undo.tool}"[:36],
                              utitle))
    for rec in actions:  # dependency edges, on the left margin
        for dep in rec.depends_on:
            if dep not in row_of:
                continue
            y1 = _TOP + row_of[dep] * _ROW + 12
            y2 = _TOP + row_of[rec.seq] * _ROW + 12
            bend = _LEFT - 18 - 6 * (abs(row_of[rec.seq] - row_of[dep]) % 6)
            parts.append(f'<path class="dep" d="M{_LEFT},{y1} C{bend},{y1} {bend},{y2} '
                         f'{_LEFT},{y2}" fill="none" stroke="#1565c0" stroke-width="1.5" '
                         'marker-end="url(#arrow)"><title>'
                         f'#{rec.seq} depends on #{dep}: undone before it</title></path>')
    parts.append("</svg>")
    return "".join(parts)


__all__ = ["COLOURS", "timeline_svg"]
