"""The store conformance suite against every store RAC ships: memory, SQLite files, PostgreSQL."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from rac.stores import MemoryStore, SQLiteStore, Store, open_store
from rac.testing.conformance import StoreConformance, postgres_test_url


class TestMemoryStore(StoreConformance):
    @pytest.fixture
    def store(self) -> Iterator[Store]:
        s = MemoryStore()
        yield s
        s.close()


class TestSQLiteStore(StoreConformance):
    @pytest.fixture
    def store(self, tmp_path: Path) -> Iterator[Store]:
        s = SQLiteStore(tmp_path / "log.db")
        yield s
        s.close()


class TestSQLiteStoreFromURL(StoreConformance):
    """The same file opened through a URL, as users configure it."""

    @pytest.fixture
    def store(self, tmp_path: Path) -> Iterator[Store]:
        s = open_store(f"sqlite:///{tmp_path / 'url.db'}")
        yield s
        s.close()


class TestPostgresStore(StoreConformance):
    @pytest.fixture
    def store(self) -> Iterator[Store]:
        from rac.stores.postgres import PostgresStore

        s = PostgresStore(postgres_test_url())
        yield s
        s.drop_schema()
        s.close()


def test_postgres_url_opens_a_postgres_store() -> None:
    url = postgres_test_url()
    s = open_store(url)
    try:
        from rac.stores.postgres import PostgresStore

        assert isinstance(s, PostgresStore)
        assert s.schema_version() >= 1
        # Opening again (a second process starting up) applies no migration twice.
        again = PostgresStore(url)
        assert again.schema_version() == s.schema_version()
        again.close()
    finally:
        s.drop_schema()  # type: ignore[attr-defined]
        s.close()


def test_sqlite_migrations_are_versioned(tmp_path: Path) -> None:
    s = SQLiteStore(tmp_path / "m.db")
    assert s.schema_version() >= 1
    s.close()
    again = SQLiteStore(tmp_path / "m.db")
    assert again.schema_version() >= 1
    again.close()
