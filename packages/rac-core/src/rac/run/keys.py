"""Identities of runs and steps: run ids, and the idempotency key of each step."""

from __future__ import annotations

import functools
import hashlib
import os
import random

#: Run ids: a generator seeded from the OS, re-seeded in every forked child (a forked worker
#: must not repeat its parent's ids).
_IDS = random.Random(os.urandom(16))
os.register_at_fork(after_in_child=lambda: _IDS.seed(os.urandom(16)))


def new_run_id() -> str:
    """A fresh run id: ``run-`` and 15 random hex digits."""
    return f"run-{_IDS.getrandbits(60):015x}"


@functools.lru_cache(maxsize=1024)
def key_prefix(run_id: str) -> str:
    """15 hex digits that stand for the run in its idempotency keys: a generated run id's own
    random digits, else a hash of the id."""
    digits = run_id[4:]
    if len(run_id) == 19 and run_id.startswith("run-") and digits.isalnum() \
            and digits == digits.lower():
        try:
            int(digits, 16)
        except ValueError:
            pass
        else:
            return digits
    return hashlib.blake2b(run_id.encode(), digest_size=8).hexdigest()[:15]


def idempotency_key(run_id: str, seq: int, kind: str) -> str:
    """The key of one step: stable across retries and recovery, different across runs.

    24 characters: the run's prefix, ``a`` (action) or ``c`` (compensation), the seq."""
    return step_key(key_prefix(run_id), seq, kind)


def step_key(prefix: str, seq: int, kind: str) -> str:
    """:func:`idempotency_key` from the run's :func:`key_prefix` (a run computes it once)."""
    return f"{prefix}{kind[:1]}{seq:08x}"
