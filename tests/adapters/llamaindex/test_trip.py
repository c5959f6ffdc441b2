"""A trip booked by real LlamaIndex agents under RAC: rollback, report, replan."""

from __future__ import annotations

from llama_index.core.agent.workflow import AgentWorkflow, FunctionAgent, ReActAgent

from rac.models import RunStatus
from rac.testing import TravelWorld, assert_rollback_order
from rac_llamaindex import enable_rac, rac_run_of
from rac_llamaindex.testing import ModelInput, ScriptedModel
from tests.adapters.llamaindex.support import (
    PAR_CAR,
    PAR_FLIGHT,
    PAR_HOTEL,
    cancellations,
    engine,
    records_of,
    world_tools,
)


async def test_function_agent_car_fails_hotel_then_flight_undone_and_replan_completes() -> None:
    world = TravelWorld()
    world.fail("book_car", "permanent", message="no cars left", times=1)
    live_at_replan: list[list[str]] = []

    def replan(seen: ModelInput) -> list[tuple[str, dict[str, object]]]:
        live_at_replan.append([b["booking_id"] for b in world.live()])
        return [("book_flight", PAR_FLIGHT)]

    model = ScriptedModel([
        [("book_flight", PAR_FLIGHT)], [("book_hotel", PAR_HOTEL)], [("book_car", PAR_CAR)],
        replan, [("book_hotel", PAR_HOTEL)], [("rent_car", PAR_CAR)], "Trip booked"])
    agent = enable_rac(FunctionAgent(name="travel", tools=world_tools(world),
                                     llm=model.function_calling_llm()), engine())

    handler = agent.run(user_msg="Book ann's trip to Paris")
    assert str(await handler) == "Trip booked"

    run = rac_run_of(handler)
    assert run is not None and run.status is RunStatus.COMPLETED
    # The hotel, then the flight, were cancelled before the model's next turn.
    assert cancellations(world)[:2] == ["cancel_hotel", "cancel_flight"]
    assert_rollback_order(run.records(), ["book_hotel", "book_flight"])
    assert live_at_replan == [[]]
    report = model.inputs[3].tool_results()[-1]
    assert report.startswith("RAC: book_car failed (permanent: no cars left)")
    assert "Undone, newest first: book_hotel HT-102 (via cancel_hotel), book_flight FL-101" \
        in report
    assert "The world is back" in report
    # The replan's bookings are live, and all of it is one run of the agent.
    assert sorted(b["kind"] for b in world.live()) == ["car", "flight", "hotel"]
    assert [t for t, _, _ in records_of(run)] == [
        "book_flight", "book_hotel", "book_car", "cancel_hotel", "cancel_flight",
        "book_flight", "book_hotel", "rent_car"]
    assert {a for _, a, _ in records_of(run)} == {"travel"}
    assert [r.run_id for r in run.engine.store.list_runs()] == [run.run_id]


async def test_react_agent_receives_the_report_as_its_observation() -> None:
    world = TravelWorld()
    world.fail("book_hotel", "permanent", message="hotel is full")
    model = ScriptedModel([[("book_flight", PAR_FLIGHT)], [("book_hotel", PAR_HOTEL)],
                           "Sorry, no hotel in Paris"])
    agent = enable_rac(ReActAgent(name="planner", tools=world_tools(world),
                                  llm=model.react_llm()), engine())

    handler = agent.run(user_msg="Book ann's trip to Paris")
    assert str(await handler) == "Sorry, no hotel in Paris"

    prompt = model.inputs[2].text
    observation = prompt[prompt.rindex("Observation:"):]
    assert observation.startswith("Observation: RAC: book_hotel failed (permanent: hotel is full)")
    assert "Undone, newest first: book_flight FL-101 (via cancel_flight)" in observation
    assert world.live() == []
    run = rac_run_of(handler)
    assert run is not None and run.status is RunStatus.COMPENSATED
    assert records_of(run) == [("book_flight", "planner", "compensated"),
                               ("book_hotel", "planner", "failed"),
                               ("cancel_flight", "planner", "completed")]


async def test_agent_workflow_failure_in_second_agent_undoes_first_agents_bookings() -> None:
    world = TravelWorld()
    world.fail("book_car", "permanent", message="no cars left")
    planner_model = ScriptedModel([
        [("book_flight", PAR_FLIGHT)],
        [("handoff", {"to_agent": "driver", "reason": "book the car"})]])
    driver_model = ScriptedModel([[("book_car", PAR_CAR)], "No car; the flight is cancelled"])
    planner = FunctionAgent(name="planner", description="books flights",
                            tools=world_tools(world, ("book_flight", "cancel_flight")),
                            llm=planner_model.function_calling_llm(), can_handoff_to=["driver"])
    driver = FunctionAgent(name="driver", description="books cars",
                           tools=world_tools(world, ("book_car", "cancel_car")),
                           llm=driver_model.function_calling_llm())
    workflow = enable_rac(AgentWorkflow(agents=[planner, driver], root_agent="planner"),
                          engine())

    handler = workflow.run(user_msg="Fly ann to Paris and get her a car")
    assert str(await handler) == "No car; the flight is cancelled"

    run = rac_run_of(handler)
    assert run is not None and run.status is RunStatus.COMPENSATED
    # One log for both agents, each call under its agent; the hand-off is not in it.
    assert records_of(run) == [("book_flight", "planner", "compensated"),
                               ("book_car", "driver", "failed"),
                               ("cancel_flight", "planner", "completed")]
    assert world.live() == []
    assert "Undone, newest first: book_flight FL-101" in driver_model.inputs[1].tool_results()[-1]
