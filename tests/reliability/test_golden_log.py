"""A log written by RAC 0.1 (the demo, stopped hard right after a compensation's intent) must
load and recover in every later version. Fixtures: fixtures/golden-v0.1-{log,world}.db."""

from __future__ import annotations

import shutil
from pathlib import Path

from rac.demo.crash import KeyedTravelWorld
from rac.models import RecordKind, RecordStatus, RunStatus
from rac.stores import SQLiteStore
from rac.stores.sql import MIGRATIONS
from tests.reliability.support import check_world_after_abort, keyed_engine

FIXTURES = Path(__file__).parent / "fixtures"


def test_golden_log_loads_and_recovers(tmp_path: Path) -> None:
    for name in ("golden-v0.1-log.db", "golden-v0.1-world.db"):
        shutil.copy(FIXTURES / name, tmp_path / name)
    store = SQLiteStore(tmp_path / "golden-v0.1-log.db")
    # Migrated in place to the current schema; its records predate effect classes and undo data.
    assert store.schema_version() == max(version for version, _ in MIGRATIONS)
    (info,) = store.list_runs()
    assert info.status is RunStatus.COMPENSATING
    records = store.get_records(info.run_id)
    assert [(r.tool, r.kind, r.status) for r in records] == [
        ("book_flight", RecordKind.ACTION, RecordStatus.COMPLETED),
        ("book_hotel", RecordKind.ACTION, RecordStatus.COMPENSATING),
        ("book_car", RecordKind.ACTION, RecordStatus.FAILED),
        ("cancel_hotel", RecordKind.COMPENSATION, RecordStatus.PENDING),
    ]
    assert all((r.effect, r.undo) == ("", None) for r in records)
    world = KeyedTravelWorld(str(tmp_path / "golden-v0.1-world.db"))
    assert len(world.live()) == 2
    engine = keyed_engine(world, store)
    # Named explicitly: its writer ran on another host, whose liveness cannot be checked here.
    (out,) = engine.recover([info.run_id])
    assert out.run_id == info.run_id and out.outcome == "compensated"
    check_world_after_abort(world)
    world.close()
