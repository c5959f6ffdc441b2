"""Transaction log stores and :func:`open_store`, which opens one from a URL."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from rac.errors import StoreError
from rac.stores.base import Store
from rac.stores.capabilities import PairStore, supports
from rac.stores.memory import MemoryStore
from rac.stores.read_only import DEFAULT_WAIT
from rac.stores.sqlite import SQLiteStore

__all__ = ["DEFAULT_STORE_URL", "MemoryStore", "PairStore", "SQLiteStore", "Store", "open_store",
           "supports"]

#: Where the log lives when no store is given and ``RAC_STORE`` is not set.
DEFAULT_STORE_URL = "sqlite:///.rac/rac.db"


def open_store(store: Store | str | Path | None = None, *, read_only: bool = False,
               wait: float = DEFAULT_WAIT, on_wait: Callable[[str], None] | None = None
               ) -> Store:
    """Open a store from an object, a URL (``memory://``, ``sqlite:///path``,
    ``postgresql://...``), or by default the URL in ``RAC_STORE`` or ``.rac/rac.db``.

    ``read_only=True`` opens an existing SQLite or PostgreSQL log for reading only: nothing is
    created or written, a missing, corrupt or newer log raises :class:`rac.StoreError`, and a
    lock another process holds is waited for up to ``wait`` seconds, announced once through
    ``on_wait`` (see :mod:`rac.stores.read_only`). A store object is returned as it is."""
    if store is None:
        store = os.environ.get("RAC_STORE") or DEFAULT_STORE_URL
    sql_options: dict[str, object] = {"read_only": True, "wait": wait, "on_wait": on_wait} \
        if read_only else {}
    if isinstance(store, Path):
        return SQLiteStore(store, **sql_options)  # type: ignore[arg-type]
    if not isinstance(store, str):
        missing = [m for m in ("append", "update_record", "get_records", "create_run")
                   if not callable(getattr(store, m, None))]
        if missing:
            raise StoreError(f"{type(store).__name__} is not a store: it lacks {', '.join(missing)}")
        return store
    url = store.strip()
    if url in ("memory://", "memory:", "memory"):
        return MemoryStore()
    if url.startswith("sqlite://"):
        return SQLiteStore.from_url(url, **sql_options)
    if url.startswith(("postgresql://", "postgres://")):
        try:
            from rac.stores.postgres import PostgresStore
        except ImportError as e:  # pragma: no cover - depends on the extra
            raise StoreError(
                f"store URL {url!r} needs the PostgreSQL driver: install the core's 'postgres' "
                f"extra (from a checkout: pip install './packages/rac-core[postgres]') ({e})") from e
        return PostgresStore(url, **sql_options)  # type: ignore[arg-type]
    raise StoreError(f"unknown store URL {url!r}: use memory://, sqlite:///path/to/file.db "
                     "or postgresql://user@host/db")
