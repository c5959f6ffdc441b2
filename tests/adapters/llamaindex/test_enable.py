"""enable_rac's contract: what it accepts, what it refuses (at enable time, naming what was
wrong), what it keeps of the user's tools, and that enabling twice changes nothing."""

import subprocess
import sys

import pytest
from llama_index.core.agent.workflow import AgentWorkflow, CodeActAgent, FunctionAgent
from llama_index.core.tools import FunctionTool
from llama_index.core.workflow import StartEvent, StopEvent, Workflow, step

import rac
from rac.testing import TRAVEL_COMPENSATIONS, TravelWorld
from rac_llamaindex import RACFunctionTool, enable_rac, enabled_engine, rac_run_of
from rac_llamaindex.testing import ScriptedModel
from tests.adapters.llamaindex.support import PAR_CAR, PAR_FLIGHT, engine, world_tools


def agent_of(world: TravelWorld, model: ScriptedModel | None = None,
             names: tuple[str, ...] = ("book_flight", "cancel_flight")) -> FunctionAgent:
    llm = (model or ScriptedModel(["ok"])).function_calling_llm()
    return FunctionAgent(name="travel", description="books flights", llm=llm,
                         tools=world_tools(world, names))


class _Plain(Workflow):
    @step
    async def only(self, ev: StartEvent) -> StopEvent:
        return StopEvent(result="done")


def test_an_object_rac_does_not_support_is_refused_naming_its_type() -> None:
    with pytest.raises(rac.ConfigurationError, match="got str"):
        enable_rac("my agent", engine())  # type: ignore[type-var]
    with pytest.raises(rac.ConfigurationError, match=r"got _Plain.*async with engine.run\(\)"):
        enable_rac(_Plain(), engine())  # type: ignore[type-var]


def test_an_engine_and_engine_keywords_together_are_refused() -> None:
    with pytest.raises(rac.ConfigurationError, match=r"not both \(got \['compensations'\]\)"):
        enable_rac(agent_of(TravelWorld()), engine(), compensations=TRAVEL_COMPENSATIONS)
    with pytest.raises(rac.ConfigurationError, match="must be a rac.RAC engine, got dict"):
        enable_rac(agent_of(TravelWorld()), {"compensations": {}})  # type: ignore[arg-type]


def test_a_compensation_or_alternative_naming_an_unknown_tool_is_refused() -> None:
    world = TravelWorld()
    with pytest.raises(rac.ConfigurationError, match="unknown compensating tool 'cancel_fligth'"):
        enable_rac(agent_of(world), compensations={"book_flight": "cancel_fligth"},
                   store="memory://")
    with pytest.raises(rac.ConfigurationError, match="book_flight_partner"):
        enable_rac(agent_of(world), compensations={"book_flight": "cancel_flight"},
                   alternatives={"book_flight": ["book_flight_partner"]}, store="memory://")


def test_compensators_registered_with_the_engine_need_not_be_offered_to_the_model() -> None:
    world = TravelWorld()
    world.fail("book_car", "permanent", message="no cars")
    model = ScriptedModel([[("book_flight", PAR_FLIGHT)], [("book_car", PAR_CAR)], "sorry"])
    agent = FunctionAgent(name="travel", llm=model.function_calling_llm(),
                          tools=world_tools(world, ("book_flight", "book_car")))
    # One compensator as a LlamaIndex tool, one as a plain function: neither is the model's.
    enable_rac(agent, compensations=TRAVEL_COMPENSATIONS, store="memory://",
               tools=[FunctionTool.from_defaults(fn=world.cancel_flight), world.cancel_car])
    assert [t.metadata.name for t in agent.tools] == ["book_flight", "book_car"]

    async def go() -> None:
        await agent.run(user_msg="trip")

    import asyncio

    asyncio.run(go())
    assert world.live() == []
    assert "Undone, newest first: book_flight FL-101 (via cancel_flight)" in \
        model.inputs[2].tool_results()[-1]


def test_tools_keep_their_metadata_and_are_wrapped_once_when_enabled_twice() -> None:
    world = TravelWorld()
    original = world_tools(world, ("book_flight", "cancel_flight", "cancel_car"))
    direct = FunctionTool.from_defaults(fn=world.book_car, return_direct=True)
    agent = FunctionAgent(name="travel", llm=ScriptedModel(["ok"]).function_calling_llm(),
                          tools=[*original, direct])
    shared = engine()
    enable_rac(agent, shared)
    first = list(agent.tools)
    assert enable_rac(agent, shared) is agent
    assert agent.tools == first  # the very same wrappers
    assert all(isinstance(t, RACFunctionTool) for t in agent.tools)
    for wrapped, user in zip(agent.tools, [*original, direct], strict=True):
        assert wrapped.metadata is user.metadata
        assert wrapped.rac_inner is user  # type: ignore[attr-defined]
    assert enabled_engine(agent) is shared

    # Enabled again with another engine: rewrapped around the user's tools, not nested.
    other = engine()
    enable_rac(agent, other)
    assert all(t.rac_engine is other and t.rac_inner in [*original, direct]  # type: ignore[attr-defined]
               for t in agent.tools)
    assert enabled_engine(agent) is other


async def test_enabling_twice_records_each_call_once() -> None:
    world = TravelWorld()
    model = ScriptedModel([[("book_flight", PAR_FLIGHT)], "booked"])
    agent = agent_of(world, model)
    shared = engine()
    enable_rac(enable_rac(agent, shared), shared)
    handler = agent.run(user_msg="fly")
    await handler
    run = rac_run_of(handler)
    assert run is not None
    assert [r.tool for r in run.records()] == ["book_flight"]
    assert len(shared.store.list_runs()) == 1


def test_agent_workflow_agents_are_all_enabled_and_codeact_is_accepted() -> None:
    world = TravelWorld()
    first = agent_of(world)
    second = FunctionAgent(name="driver", description="books cars", llm=ScriptedModel(["ok"]).function_calling_llm(),
                           tools=world_tools(world, ("book_car", "cancel_car")))
    workflow = enable_rac(AgentWorkflow(agents=[first, second], root_agent="travel"), engine())
    assert enabled_engine(workflow) is not None
    assert {t.rac_agent_id for a in (first, second) for t in a.tools} == {  # type: ignore[attr-defined]
        "travel", "driver"}

    async def execute(code: str) -> dict[str, str]:
        return {"output": code}

    codeact = CodeActAgent(name="coder", code_execute_fn=execute,
                           llm=ScriptedModel(["ok"]).function_calling_llm(),
                           tools=world_tools(world, ("book_flight", "cancel_flight")))
    enable_rac(codeact, engine())
    # The model's prompt still describes the user's functions.
    assert world.book_flight in [t.real_fn for t in codeact.tools]  # type: ignore[attr-defined]


def test_importing_the_adapter_loads_no_other_agent_framework() -> None:
    code = ("import sys, rac_llamaindex, rac_llamaindex.testing; "
            "bad = sorted({m.split('.')[0] for m in sys.modules} & "
            "{'langchain', 'langchain_core', 'langgraph', 'crewai', 'semantic_kernel', "
            "'rac_langgraph', 'rac_crewai', 'rac_semantic_kernel', 'autogen'}); print(bad)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "[]"
