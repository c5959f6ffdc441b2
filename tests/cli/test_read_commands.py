"""Read commands never write, and every CLI error is one line with a non-zero exit.

Reproductions of issue #27: `rac runs`/`rac show`/`rac resolve` on a mistyped path created the
folders and an empty log and answered "no runs"; on a log locked by a writer they hung ~24 s
silently; a corrupt file gave a `sqlite3.DatabaseError` traceback; a bad `--app` a traceback;
`| head` a `BrokenPipeError` traceback; a log written by a newer schema (version 99) was opened
and written to."""

from __future__ import annotations

import sqlite3
import subprocess
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from rac.models import RunInfo, RunStatus
from rac.stores import SQLiteStore
from rac.stores.postgres import split_url
from tests.cli.support import RAC, TIMEOUT, demo_log, files, log_url, one_line_error, rac
from tests.stores.support import exclusive_lock, fresh_postgres_url, postgres_runs_locked

__all__ = ["log_url"]  # the fixture, used by name


def mistyped(tmp_path: Path, kind: str) -> str:
    if kind == "sqlite":
        return f"sqlite:///{tmp_path / 'typo' / 'deeper' / 'ops.db'}"
    from rac.testing.conformance import postgres_test_url

    return postgres_test_url()  # a schema nobody created


READ_COMMANDS = [("runs",), ("show", "run-x"), ("resolve", "run-x", "1", "--note", "n"),
                 ("pairs",), ("pairs", "approve", "k")]


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
@pytest.mark.parametrize("command", READ_COMMANDS, ids=lambda c: "-".join(c[:2]))
def test_a_mistyped_log_is_an_error_and_nothing_is_created(tmp_path: Path, kind: str,
                                                           command: tuple[str, ...]) -> None:
    url = mistyped(tmp_path, kind)
    out = rac(*command, "--store", url, cwd=tmp_path)
    line = one_line_error(out)
    assert "no log at" in line or "no RAC log at" in line
    if kind == "sqlite":
        assert "typo/deeper/ops.db" in line
    assert files(tmp_path) == {} and list(tmp_path.iterdir()) == []
    if kind == "postgres":
        dsn, schema = split_url(url)
        with psycopg.connect(dsn, autocommit=True) as conn:
            assert conn.execute("SELECT 1 FROM pg_namespace WHERE nspname=%s",
                                (schema,)).fetchone() is None


def test_read_commands_leave_the_log_as_it_was(tmp_path: Path, log_url: str) -> None:
    run = demo_log(log_url, tmp_path)
    before = files(tmp_path)
    for command in (("runs",), ("runs", "--json"), ("show", run["run_id"]),
                    ("show", run["run_id"], "--json"), ("pairs",)):
        out = rac(*command, "--store", log_url, cwd=tmp_path)
        assert out.returncode == 0, out.stderr
    assert files(tmp_path) == before


def test_a_corrupt_log_is_one_clear_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.db"
    bad.write_bytes(b"not a database " * 100)
    for command in (("runs",), ("show", "r"), ("resolve", "r", "1", "--note", "n")):
        line = one_line_error(rac(*command, "--store", f"sqlite:///{bad}", cwd=tmp_path))
        assert "bad.db is not a RAC log" in line
    assert bad.read_bytes() == b"not a database " * 100


def newer(url: str, tmp_path: Path) -> None:
    """Mark the log as written by a RAC with schema version 99."""
    if url.startswith("sqlite"):
        conn = sqlite3.connect(tmp_path / "log.db")
        conn.execute("INSERT INTO schema_migrations(version, applied_at) VALUES (99, 0)")
        conn.commit()
        conn.close()
        return
    dsn, schema = split_url(url)
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f'INSERT INTO "{schema}".rac_schema_migrations VALUES (99, 0)'.encode())


def postgres_rows(url: str) -> list[tuple[object, ...]]:
    dsn, schema = split_url(url)
    with psycopg.connect(dsn, autocommit=True) as conn:
        return [*conn.execute(f'SELECT * FROM "{schema}".rac_runs ORDER BY run_id'.encode()),
                *conn.execute(f'SELECT run_id, seq, status, note FROM "{schema}".rac_records '
                              "ORDER BY run_id, seq".encode())]


def test_a_log_of_a_newer_schema_is_refused_and_never_written(tmp_path: Path,
                                                               log_url: str) -> None:
    run = demo_log(log_url, tmp_path)
    newer(log_url, tmp_path)
    before = files(tmp_path)
    rows = postgres_rows(log_url) if log_url.startswith("postgresql") else None
    for command in (("runs",), ("show", run["run_id"]), ("resume", run["run_id"]),
                    ("resolve", run["run_id"], "1", "--note", "n"), ("recover",),
                    ("demo", "--recover"), ("demo",), ("pairs", "approve", "k")):
        line = one_line_error(rac(*command, "--store", log_url, cwd=tmp_path))
        assert "newer RAC" in line and "schema version 99" in line, command
    assert files(tmp_path) == before
    if rows is not None:
        assert postgres_rows(log_url) == rows


@pytest.fixture
def locked_sqlite_log(tmp_path: Path) -> Iterator[tuple[str, object]]:
    path = tmp_path / "log.db"
    store = SQLiteStore(path)
    store.create_run(RunInfo("run-1", status=RunStatus.COMPLETED, created_at=1.0))
    store.close()
    with exclusive_lock(path) as release:
        yield f"sqlite:///{path}", release


def test_a_locked_log_is_waited_for_within_a_bound_and_the_wait_is_announced(
        tmp_path: Path, locked_sqlite_log: tuple[str, object]) -> None:
    url, _ = locked_sqlite_log
    for command in (("runs",), ("show", "run-1")):
        out = rac(*command, "--store", url, "--wait", "1", cwd=tmp_path)
        lines = out.stderr.strip().splitlines()
        assert out.returncode == 2 and len(lines) == 2, out.stderr
        assert "locked by another process; waiting up to 1 s" in lines[0]
        assert "stayed locked for 1 s" in lines[1] and "Traceback" not in out.stderr


def test_a_lock_released_while_a_read_command_waits_lets_it_answer(
        tmp_path: Path, locked_sqlite_log: tuple[str, object]) -> None:
    url, release = locked_sqlite_log
    proc = subprocess.Popen([RAC, "runs", "--store", url, "--json"], cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stderr is not None
    announced = proc.stderr.readline()
    assert "locked by another process; waiting up to 10 s" in announced
    release.set()  # type: ignore[attr-defined]
    stdout, _ = proc.communicate(timeout=TIMEOUT)
    assert proc.returncode == 0 and '"summary": "held"' in stdout


def test_a_locked_postgres_log_is_waited_for_within_a_bound(tmp_path: Path) -> None:
    with fresh_postgres_url() as url, postgres_runs_locked(url):
        out = rac("runs", "--store", url, "--wait", "1", cwd=tmp_path)
    lines = out.stderr.strip().splitlines()
    assert out.returncode == 2 and len(lines) == 2, out.stderr
    assert "locked by another process" in lines[0] and "stayed locked for 1 s" in lines[1]


def test_a_broken_pipe_ends_quietly(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "log.db")
    for i in range(2000):
        store.create_run(RunInfo(f"run-{i:05d}", status=RunStatus.COMPLETED,
                                 created_at=float(i)))
    store.close()
    proc = subprocess.Popen([RAC, "runs", "--store", f"sqlite:///{tmp_path / 'log.db'}",
                             "--limit", "2000"], cwd=tmp_path, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.readline()
    proc.stdout.close()  # what `| head -1` does
    err = proc.stderr.read().decode()
    proc.wait(TIMEOUT)
    assert err == "" and proc.returncode == 141


@pytest.mark.parametrize(("app", "says"), [
    ("no_such_module:engine", "cannot import no_such_module"),
    ("json:no_such_attr", "json has no attribute 'no_such_attr'"),
    ("json:dumps", "not a rac.RAC engine"),
    ("justamodule", "must be MODULE:ATTR"),
])
def test_a_bad_app_is_one_line(tmp_path: Path, app: str, says: str) -> None:
    url = f"sqlite:///{tmp_path / 'log.db'}"
    demo_log(url, tmp_path)
    for command in (("recover", "--app", app), ("resume", "run-x", "--app", app),
                    ("pairs", "--app", app)):
        line = one_line_error(rac(*command, "--store", url, cwd=tmp_path))
        assert says in line and "--app" in line, line


def test_usage_errors_are_one_line(tmp_path: Path) -> None:
    line = one_line_error(rac("show", cwd=tmp_path))
    assert "run_id" in line and "rac show --help" in line
    line = one_line_error(rac("runs", "--status", "nope", cwd=tmp_path))
    assert "invalid choice" in line


def test_tracebacks_only_with_debug(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'missing.db'}"
    quiet = rac("show", "run-x", "--store", url, cwd=tmp_path)
    one_line_error(quiet)
    loud = rac("--debug", "show", "run-x", "--store", url, cwd=tmp_path)
    assert loud.returncode == 2 and "Traceback (most recent call last)" in loud.stderr
    assert "no log at" in loud.stderr
    assert list(tmp_path.iterdir()) == []
