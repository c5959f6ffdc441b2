"""``rac ui``: the operator's view of the log in a browser — runs, a run's timeline, the
needs-attention queue and the compensation pairs — with resume, resolve and a verdict on a
model's proposed pairs, safe by default (loopback, a token for actions, CSRF on every form,
``--read-only``). Ships as the core's ``ui`` extra (Starlette and uvicorn).

:func:`rac.ui.app.create_app` builds the application over any store; :func:`serve` runs it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rac.engine import RAC
    from rac.stores import Store
    from rac.ui.security import Guard

__all__ = ["serve"]


def serve(store: Store, *, engine: RAC | None = None, guard: Guard, port: int = 8765,
          log_level: str = "warning", **uvicorn_options: Any) -> None:
    """Run the application on ``guard.host:port`` until interrupted."""
    import uvicorn

    from rac.ui.app import create_app

    app = create_app(store, engine=engine, guard=guard)
    uvicorn.run(app, host=guard.host, port=port, log_level=log_level, **uvicorn_options)
