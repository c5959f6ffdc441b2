"""Progress on a terminal for long commands (``rac prove``, ``rac recover`` of many runs): tqdm's
bar when tqdm is installed (the core's ``cli`` extra), a one-line counter otherwise; nothing at all
when stderr is not a terminal (pipes, CI logs, tests)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

#: called with (done, total, what was just done)
Progress = Callable[[int, int, str], None]


def terminal_progress(desc: str, unit: str = "item") -> Progress | None:
    """A progress callback that draws on stderr, or None when stderr is not a terminal."""
    if not sys.stderr.isatty():
        return None
    try:
        from tqdm import tqdm  # type: ignore[import-untyped]
    except ImportError:
        def plain(done: int, total: int, what: str) -> None:
            end = "\n" if done >= total else ""
            print(f"\r{desc}: {done}/{total} {what[:60]:<60}", end=end, file=sys.stderr,
                  flush=True)
        return plain
    bar: list[Any] = []

    def update(done: int, total: int, what: str) -> None:
        if not bar:
            # every item is drawn (items are runs and points: seconds each, not microseconds)
            bar.append(tqdm(total=total, desc=desc, unit=unit, file=sys.stderr, leave=False,
                            mininterval=0))
        bar[0].set_postfix_str(what[:40])
        bar[0].update(1)
        if done >= total:
            bar[0].close()
    return update


__all__ = ["Progress", "terminal_progress"]
