"""The processes of ``rac prove``'s crash points: ``python -m rac.testing.proof_child scenario
SPEC`` runs the scenario and is killed at the point (``os._exit``: no cleanup, no flush);
``python -m rac.testing.proof_child recover SPEC`` is the fresh process that recovers the runs
the first one left, as a start-up ``engine.recover()`` would. ``SPEC`` is the JSON
:meth:`rac.testing.proof.Prover._spec` writes."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any


def _scenario(spec: dict[str, Any]) -> int:
    from rac.testing.proof import _call_maybe_async, _load, _takes_argument
    from rac.testing.proof_points import CrashAt, Injector, Observer, Point

    engine = _load(spec["engine"], "engine")
    scenario = _load(spec["scenario"], "scenario")
    observer = Observer()
    engine.register_plugin(observer)
    if spec.get("point"):
        point = Point.from_dict(spec["point"])
        engine.register_plugin(Injector(point, observer))
        engine.register_plugin(CrashAt(point, observer, Path(spec["runs_file"])))
    if spec.get("virtual_time"):
        from rac.testing.clock import VirtualClock

        engine.clock = VirtualClock(engine.clock.now())
    try:
        _call_maybe_async(scenario, *((engine,) if _takes_argument(scenario) else ()))
    except Exception:  # noqa: BLE001 - a rollback the scenario lets out is expected
        from rac.errors import ToolCallFailed

        if not isinstance(sys.exc_info()[1], ToolCallFailed):
            raise
    Path(spec["runs_file"]).write_text(json.dumps(observer.seen.runs))
    return 0


def _recover(spec: dict[str, Any]) -> int:
    from rac.testing.proof import _load

    engine = _load(spec["engine"], "engine")
    if spec.get("virtual_time"):
        from rac.testing.clock import VirtualClock

        engine.clock = VirtualClock(engine.clock.now())
    runs = list(spec.get("runs") or [])
    recovered = engine.recover(runs) if runs else engine.recover()
    out = {"outcomes": [r.to_dict() for r in recovered],
           "reports": [r.report.model_dump(mode="json") for r in recovered
                       if r.report is not None]}
    Path(spec["runs_file"]).with_suffix(".recovered.json").write_text(json.dumps(out))
    return 0


def main(argv: list[str]) -> int:
    """Run one of the two processes (see the module docstring)."""
    if len(argv) != 2 or argv[0] not in ("scenario", "recover"):
        print("usage: python -m rac.testing.proof_child scenario|recover SPEC", file=sys.stderr)
        return 2
    spec = json.loads(argv[1])
    return _scenario(spec) if argv[0] == "scenario" else _recover(spec)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
