"""``rac demo --mcp``: the demo's trip booked through a real MCP server over stdio.

The scripted agent makes the same calls as ``rac demo``, but every tool is a tool of the example
MCP server (:mod:`rac.demo.mcp_travel_server`, started as a subprocess). RAC learns the
compensation pairs from the server's tool metadata, not from code, and undoes the bookings by
calling the server's cancel tools. Needs the ``mcp`` package; runs offline.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from rac.demo.trip import DEMO_STEPS, FAIL_CHOICES, DemoResult, world_path_for, world_state
from rac.engine import RAC
from rac.errors import ToolCallFailed
from rac.retry import RetryPolicy
from rac.stores import DEFAULT_STORE_URL, open_store
from rac.testing.world import TravelWorld

#: How long the demo waits for one answer of the server (seconds).
CALL_TIMEOUT = 30.0


def server_command(world_path: str, fail: str) -> tuple[str, list[str]]:
    """The command that starts the example server on ``world_path``, failing ``fail``."""
    args = ["-m", "rac.demo.mcp_travel_server", "--world", world_path]
    if fail != "none":
        args += ["--fail", f"book_{fail}=permanent"]
    return sys.executable, args


def learned_lines(found: Any) -> list[str]:
    """What RAC took from the server's metadata, one line per tool, for the demo's output."""
    lines = []
    for name, tool in found.tools.items():
        if tool.compensation is not None:
            lookup = f", looked up with {tool.lookup.tool}" if tool.lookup is not None else ""
            lines.append(f"{name}: undone by {tool.compensation.tool}{lookup}")
        elif tool.verdict.read_only:
            lines.append(f"{name}: read-only (trusted server)")
        elif tool.verdict.claims_read_only:
            lines.append(f"{name}: claims read-only; protected (server not trusted)")
        elif tool.verdict.effect:
            lines.append(f"{name}: {tool.verdict.effect}")
    return lines


async def arun_mcp_demo(fail: str = "car", store: str | None = None, *,
                        world_path: str | None = None, trusted: bool = False) -> DemoResult:
    """Book the demo trip through the example MCP server; ``fail`` names the booking that fails
    for good. ``trusted`` says whether RAC believes the server's read-only claims."""
    try:
        from mcp import ClientSession, StdioServerParameters
        from mcp.client.stdio import stdio_client
    except ImportError as e:  # pragma: no cover - mcp is in the workspace
        raise RuntimeError("`rac demo --mcp` needs the mcp package (pip install mcp)") from e
    import rac.mcp

    if fail not in FAIL_CHOICES:
        raise ValueError(f"--fail must be one of {', '.join(FAIL_CHOICES)}, got {fail!r}")
    store_url = store or os.environ.get("RAC_STORE") or DEFAULT_STORE_URL
    path = world_path or world_path_for(store_url).replace("demo-world", "demo-mcp-world")
    log = open_store(store_url)  # first: a log RAC may not write to leaves the world alone
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    for suffix in ("", "-wal", "-shm"):
        Path(path + suffix).unlink(missing_ok=True)
    TravelWorld(path).close()  # create the world before the server opens it
    command, args = server_command(path, fail)
    params = StdioServerParameters(command=command, args=args,
                                   env={**os.environ, "PYTHONUNBUFFERED": "1"})
    engine = RAC(store=log, agent_id="demo-agent",
                 retry=RetryPolicy(max_attempts=3, initial_delay=0.05, max_delay=0.2, jitter=0),
                 compensation_retry=RetryPolicy(max_attempts=3, initial_delay=0.05,
                                                max_delay=0.2, jitter=0))
    agent_saw: list[str] = []
    with open(os.devnull, "w") as quiet:  # the server's own logging stays out of the demo
        async with stdio_client(params, errlog=quiet) as (read, write), \
                ClientSession(read, write) as session:
            await session.initialize()
            listed = await rac.mcp.list_session_tools(session)
            found = rac.mcp.register_mcp_tools(engine, listed, server="travel",
                                               trusted=trusted)
            engine.register_tools(rac.mcp.session_tools(session, listed, timeout=CALL_TIMEOUT))
            async with engine.run(agent_id="demo-agent") as run:
                for tool, step_args in DEMO_STEPS:
                    try:
                        result: Any = await run.acall(tool, **step_args)
                    except ToolCallFailed as failed:
                        agent_saw.append(str(failed))
                        break
                    value = engine.normalize_result(tool, result)
                    agent_saw.append(f"{tool} -> {value['booking_id']}")
    world = TravelWorld(path)
    try:
        return DemoResult(run.run_id, run.status, engine.store.get_records(run.run_id),
                          world_state(world), agent_saw, learned_lines(found))
    finally:
        world.close()
        engine.store.close()


def run_mcp_demo(fail: str = "car", store: str | None = None, *,
                 world_path: str | None = None, trusted: bool = False) -> DemoResult:
    """:func:`arun_mcp_demo`, run to completion on a fresh event loop."""
    import asyncio

    return asyncio.run(arun_mcp_demo(fail, store, world_path=world_path, trusted=trusted))
