"""Regression (from a review of the core), the bug it guarded against: secrets reach the SQLite log: (1) a JSON-string result (the usual shape of framework/MCP
tool output) is stored verbatim; (2) a structured error result is json.dumps'd into
record.error with only card-number redaction."""
import pytest

import rac

SECRET = "sk-live-PLANTED-9f8e7d"


def _bytes(store):
    import pathlib
    p = pathlib.Path(store.path)
    return b"".join(f.read_bytes() for f in p.parent.glob(p.name + "*"))


def test_json_string_result_is_redacted(make_engine, world, store):
    def login(user: str) -> str:
        return f'{{"session": "S-1", "api_key": "{SECRET}"}}'

    engine = make_engine(read_only=["login"])
    with engine.run(tools=[login]) as run:
        run.call(login, user="ada")
    assert SECRET.encode() not in _bytes(store)


def test_error_result_secret_is_redacted(make_engine, world, store):
    def pay(user: str) -> dict:
        return {"error": {"message": "declined", "token": SECRET}}

    engine = make_engine(read_only=["pay"])
    with pytest.raises(rac.ToolCallFailed):
        with engine.run(tools=[pay]) as run:
            run.call(pay, user="ada")
    assert SECRET.encode() not in _bytes(store)
