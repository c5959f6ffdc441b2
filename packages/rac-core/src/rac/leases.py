"""Leases: how a live run tells every other process that it is being worked on.

A run is written with its owner (``host:pid:nonce`` of the engine) and a lease: a time until
which nobody else may claim it. The owner renews the lease with its writes (each commit
carries a :class:`rac.stores.changes.Fence` that checks that the owner still holds the run,
and renews the lease once a tenth of it has run down since the last renewal,
:data:`rac.run.log.RENEW_AFTER`) and, while the run is idle or a tool call is long, with a
heartbeat: a background thread that renews the leases of the engine's live runs every
``heartbeat_seconds`` (default: a third of ``lease_seconds``, so two beats may be missed
before a lease runs out).

What a lease buys:

* ``rac recover`` (:func:`rac.recovery.recover`) on any machine finds exactly the unfinished
  runs whose lease ran out (or whose owner is a process on this host that is gone), with no
  flag and no run id;
* of two machines racing to recover a run, one claims it (compare-and-set in the store);
* a run that is over in its process ends its lease (:data:`ENDED`) in the same commit as its
  last status: ``rac resume`` may act on a ``needs_attention`` run at once, and one an
  interruption left ``running`` is found by ``rac recover``;
* a worker that stops renewing (paused, partitioned, swapped out) past its lease loses the
  run: once a recoverer has claimed it, every later write of the worker is refused
  (:class:`rac.errors.LeaseLostError`), so nothing it does after that reaches the log or
  contradicts the recoverer. Its next tool call is refused before it runs (its intent cannot be
  written).

The heartbeat thread runs only for stores that other processes can share (``blocking``
stores: SQLite, PostgreSQL, third-party ones), one per engine, and only while the engine has
live runs; it stops when the engine is closed or collected. Lease times are read from the
engine's clock, the heartbeat's interval from real time.
"""

from __future__ import annotations

import threading
import time
import weakref
from typing import TYPE_CHECKING

from rac.errors import LeaseLostError
from rac.events import emit
from rac.models import RELEASED
from rac.stores.changes import Fence, commit

if TYPE_CHECKING:
    from rac.engine import RAC
    from rac.models import RunInfo
    from rac.run.log import RunLog

__all__ = ["DEFAULT_LEASE_SECONDS", "ENDED", "Leases", "claim"]

#: How long a live run's lease lasts without renewal (seconds).
DEFAULT_LEASE_SECONDS = 60.0
#: The lease of a run that is over in its process (its block closed, or its adapter finished
#: it): :data:`rac.models.RELEASED`, the word recovery reads as "its owner left it", so an
#: operator may act on the run at once; not 0, which marks a run written without a lease (RAC
#: 0.1's logs).
ENDED = RELEASED


def claim(engine: RAC, info: RunInfo, *, owner: str | None = None,
          lease_seconds: float | None = None) -> bool:
    """Make ``owner`` (default: the engine) the holder of the run ``info`` describes, as the
    log holds it now; True if it is. The claim is a compare-and-set in the store: it succeeds
    when the run has no owner, is ``owner``'s already, or its lease ran out, and also when its
    owner is a process on this host that is gone (whose lease need not run out first; the
    claim then succeeds only while that lease is the one ``info`` saw, so of two claimers one
    wins). ``lease_seconds``: the claim's lease (default: the engine's)."""
    from rac.recovery import owner_is_dead

    me = owner or engine.owner
    now = engine.clock.now()
    if info.owner not in (None, me) and owner_is_dead(info.owner):
        now = max(now, info.lease_until)
    lease = engine.leases.lease_seconds if lease_seconds is None else lease_seconds
    return engine.store.claim_run(info.run_id, me, now, lease)


class Leases:
    """The leases of one engine's live runs, and the heartbeat that renews them.

    ``lease_seconds``: how long a lease lasts; ``heartbeat_seconds``: how often the heartbeat
    renews (None: a third of ``lease_seconds``; 0: no heartbeat thread, leases are renewed by
    writes and :meth:`renew` only, as in a process that is paused)."""

    def __init__(self, engine: RAC, lease_seconds: float,
                 heartbeat_seconds: float | None = None) -> None:
        self._engine = weakref.ref(engine)
        self.lease_seconds = float(lease_seconds)
        self.heartbeat_seconds = (self.lease_seconds / 3 if heartbeat_seconds is None
                                  else float(heartbeat_seconds))
        self._held: weakref.WeakSet[RunLog] = weakref.WeakSet()
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._closed = False
        self._thread: threading.Thread | None = None

    def until(self, lease_seconds: float | None = None) -> float:
        """The end of a lease taken now."""
        engine = self._engine()
        now = engine.clock.now() if engine is not None else time.time()
        return now + (self.lease_seconds if lease_seconds is None else lease_seconds)

    # -- which runs are live ------------------------------------------------------------------
    def hold(self, log: RunLog) -> None:
        """Renew ``log``'s run until :meth:`release` (or until the run object is gone)."""
        with self._lock:
            self._held.add(log)
            self._start()

    def release(self, log: RunLog) -> None:
        """Stop renewing ``log``'s run (it finished; its lease simply runs out)."""
        with self._lock:
            self._held.discard(log)

    def held(self) -> list[RunLog]:
        """The runs renewed now."""
        with self._lock:
            return list(self._held)

    # -- renewing ----------------------------------------------------------------------------
    def renew(self) -> int:
        """Renew the lease of every held run now; returns how many were renewed. A run whose
        lease was lost (another process claimed it) is dropped and told (its next write
        raises); the ``rac.lease`` event says so."""
        renewed = 0
        for log in self.held():
            try:
                commit(log.engine.store, [Fence(log.run_id, log.owner,
                                                self.until(log.lease_seconds))],
                       durable=False)
            except LeaseLostError as e:
                self.release(log)
                log.lost = e
                emit("rac.lease", level="warning", run_id=log.run_id, status="lost",
                     owner=log.owner, error=str(e))
            except Exception as e:  # noqa: BLE001 - a heartbeat never raises; it tries again
                emit("rac.lease", level="warning", run_id=log.run_id, status="renew_failed",
                     owner=log.owner, error=f"{type(e).__name__}: {e}"[:500])
            else:
                renewed += 1
        return renewed

    def close(self) -> None:
        """Stop the heartbeat (the engine is closing)."""
        with self._lock:
            self._closed = True
            self._held.clear()
        self._wake.set()

    # -- the heartbeat thread ------------------------------------------------------------------
    def _start(self) -> None:
        """Start the heartbeat if it is wanted and not running (call under ``_lock``)."""
        if self._closed or self.heartbeat_seconds <= 0:
            return
        if self._thread is not None and self._thread.is_alive():
            return
        engine = self._engine()
        if engine is None or not getattr(engine.store, "blocking", True):
            return  # a store no other process shares: nobody else could claim its runs
        self._wake.clear()
        self._thread = threading.Thread(target=_beat, args=(weakref.ref(self),),
                                        name=f"rac-heartbeat-{engine.owner}", daemon=True)
        self._thread.start()


def _beat(ref: weakref.ref[Leases]) -> None:
    """The heartbeat: renew, then wait ``heartbeat_seconds``, until the engine is closed or
    collected or no run is held."""
    while True:
        leases = ref()
        if leases is None or leases._closed or leases._engine() is None:
            return
        wake, interval = leases._wake, leases.heartbeat_seconds
        with leases._lock:
            if not leases._held:
                leases._thread = None
                return
        del leases  # hold no reference while waiting: the engine may be collected meanwhile
        if wake.wait(interval):
            return  # closed
        leases = ref()
        if leases is None:
            return
        leases.renew()
        del leases
