"""Run many scripted turns of one framework's agent on one SQLite log, in this process, and
print how many file descriptors the process holds at the end (for the connection-reuse test,
which runs this under a low ``ulimit -n``).

    python -m tests.adapters.many_turns langgraph|crewai TURNS LOG_PATH
"""

from __future__ import annotations

import os
import sys
import tempfile
from typing import Any

import rac
from rac.testing import TRAVEL_COMPENSATIONS, TRAVEL_READ_ONLY, TravelWorld, VirtualClock


def _engine(log: str) -> rac.RAC:
    return rac.RAC(compensations=TRAVEL_COMPENSATIONS, read_only=TRAVEL_READ_ONLY,
                   store=f"sqlite:///{log}", clock=VirtualClock(), load_entrypoints=False)


def langgraph_turns(turns: int, log: str) -> rac.RAC:
    from langchain.agents import create_agent
    from langchain_core.messages import HumanMessage
    from langgraph.checkpoint.memory import InMemorySaver

    from rac_langgraph import RACMiddleware
    from rac_langgraph.testing import call, say, scripted_model, turn, world_tools

    world = TravelWorld()
    script: list[Any] = []
    for i in range(turns):
        script += [turn(call("book_flight", passenger=f"p{i}", origin="LHR", dest="CDG")),
                   say("booked")]
    eng = _engine(log)
    agent = create_agent(scripted_model(*script), world_tools(world),
                         middleware=[RACMiddleware(rac=eng)], checkpointer=InMemorySaver())
    for i in range(turns):
        agent.invoke({"messages": [HumanMessage(f"book p{i}")]},
                     {"configurable": {"thread_id": f"t{i}"}})
    return eng


def crewai_turns(turns: int, log: str) -> rac.RAC:
    os.environ.setdefault("CREWAI_DISABLE_TELEMETRY", "true")
    os.environ.setdefault("OTEL_SDK_DISABLED", "true")
    os.environ.setdefault("CREWAI_TRACING_ENABLED", "false")
    os.environ["HOME"] = tempfile.mkdtemp(prefix="rac-crewai-home-")
    from crewai import Agent, Crew, Task

    from rac_crewai import enable_rac
    from rac_crewai.testing import ScriptedLLM, world_tools

    world = TravelWorld()
    script: list[Any] = []
    for i in range(turns):
        script += [[("book_flight", {"passenger": f"p{i}", "origin": "LHR", "dest": "CDG"})],
                   "booked"]
    llm = ScriptedLLM(script)
    agent = Agent(role="flights agent", goal="book flights", backstory="b", llm=llm,
                  tools=world_tools(world, "book_flight", "cancel_flight"))
    crew = Crew(agents=[agent], tasks=[Task(description="Book the flight",
                                            expected_output="flight", agent=agent)])
    eng = _engine(log)
    enable_rac(crew, eng)
    for _ in range(turns):
        crew.kickoff()
    return eng


def main() -> None:
    framework, turns, log = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    eng = (langgraph_turns if framework == "langgraph" else crewai_turns)(turns, log)
    runs = eng.store.list_runs()
    completed = sum(1 for r in runs if r.status is rac.RunStatus.COMPLETED)
    print(f"runs={len(runs)} completed={completed} fds={len(os.listdir('/proc/self/fd'))}")
    eng.close()


if __name__ == "__main__":
    main()
