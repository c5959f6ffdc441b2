"""Docs snippets run offline, in a scratch directory, with a memory log by default."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from typing import Any

import pytest


@pytest.fixture
def docs_sandbox(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """A scratch working directory and HOME, ``RAC_STORE=memory://``, frameworks' telemetry off,
    and no network: a snippet that connects anywhere but loopback fails."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("RAC_STORE", "memory://")
    for name, value in {"CREWAI_DISABLE_TELEMETRY": "true", "OTEL_SDK_DISABLED": "true",
                        "CREWAI_TRACING_ENABLED": "false", "LANGSMITH_TRACING": "false",
                        "LANGCHAIN_TRACING_V2": "false"}.items():
        monkeypatch.setenv(name, value)
    for name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "RAC_MODEL"):
        monkeypatch.delenv(name, raising=False)
    real_connect = socket.socket.connect

    def connect(self: socket.socket, address: Any) -> Any:
        host = address[0] if isinstance(address, tuple) else address
        if self.family in (socket.AF_INET, socket.AF_INET6) and host not in (
                "127.0.0.1", "::1", "localhost"):
            raise OSError(f"docs snippets run offline: connection to {address!r} refused")
        return real_connect(self, address)

    monkeypatch.setattr(socket.socket, "connect", connect)
    yield
