"""A run as one self-contained HTML file (``rac show RUN --html > run.html``), to attach to a
ticket: the same page ``rac ui`` shows (state, what may still be live and why, the next step,
the timeline, every record), with no link back to a server, no script and no form."""

from __future__ import annotations

from collections.abc import Sequence

from rac.models import Record, RunInfo
from rac.ui.pages import Viewer, run_page


def run_document(info: RunInfo, records: Sequence[Record], *, told: str | None = None) -> str:
    """The HTML file of one run."""
    return run_page(info, records, Viewer(False, read_only=True, static=True), told=told)


__all__ = ["run_document"]
