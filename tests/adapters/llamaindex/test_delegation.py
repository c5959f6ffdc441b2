"""Delegation under RAC (issue 30, promise 5): an agent used as a tool and a ``CodeActAgent``'s
code execution are delegating calls. They are not logged as side effects of their own (which
no compensator could undo: "STILL LIVE: execute"); the calls made inside them join the
parent's run, a later failure undoes them, and the parent's model hears what was undone."""

import contextlib
import io
from typing import Any

from llama_index.core.agent.workflow import CodeActAgent, FunctionAgent
from llama_index.core.tools import FunctionTool
from structlog.testing import capture_logs

import rac
from rac.models import RecordKind, RunStatus
from rac.testing import TravelWorld, assert_compensated_once, assert_no_live_effects
from rac_llamaindex import code_functions, enable_rac, rac_run_of
from rac_llamaindex.testing import ScriptedModel
from tests.adapters.llamaindex.support import PAR_CAR, PAR_FLIGHT, engine, world_tools


def _executor(namespace: dict[str, Any]) -> Any:
    """A code executor as users write one: ``exec`` in a namespace, stdout and the error
    returned."""

    async def execute(code: str) -> dict[str, str]:
        out = io.StringIO()
        try:
            with contextlib.redirect_stdout(out):
                exec(code, namespace)  # noqa: S102 - the point of CodeAct
        except Exception as e:  # noqa: BLE001 - the model reads it
            return {"output": out.getvalue(), "error": f"{type(e).__name__}: {e}"}
        return {"output": out.getvalue()}

    return execute


def _world_without_cars() -> tuple[TravelWorld, rac.RAC]:
    world = TravelWorld()
    world.fail("book_car", "permanent", message="no cars")
    return world, engine()


def _agent_tool(world: TravelWorld, rac_engine: rac.RAC, name: str,
                script: list[Any]) -> FunctionTool:
    """``ask_<name>``: a tool awaiting the ``run()`` of an enabled agent playing ``script``
    with the world's tools (an agent used as a tool)."""
    agent = enable_rac(FunctionAgent(name=name, llm=ScriptedModel(script).function_calling_llm(),
                                     tools=world_tools(world)), rac_engine)

    async def ask(request: str) -> str:
        return str(await agent.run(user_msg=request))

    return FunctionTool.from_defaults(async_fn=ask, name=f"ask_{name}",
                                      description=f"Ask the {name} agent.")


def _code(text: str) -> str:
    return f"<execute>\n{text}\n</execute>"


async def test_codeact_code_calls_are_the_runs_calls_and_the_model_hears_the_rollback() -> None:
    world = TravelWorld()
    world.fail("book_car", "permanent", message="no cars")
    namespace: dict[str, Any] = {}
    model = ScriptedModel([
        _code("print(book_flight(passenger='ann', origin='OSL', dest='PAR')['booking_id'])"),
        _code("print(book_car(driver='ann', city='PAR'))\nprint(book_flight("
              "passenger='bob', origin='OSL', dest='PAR'))"),
        lambda given: "Nothing is booked." if "Undone, newest first: book_flight FL-101"
        in given.text else "never told",
    ])
    agent = enable_rac(CodeActAgent(name="coder", code_execute_fn=_executor(namespace),
                                    llm=model.function_calling_llm(),
                                    tools=world_tools(world)), engine())
    namespace.update(code_functions(agent))
    handler = agent.run(user_msg="Fly ann to Paris and rent a car.")
    assert str(await handler) == "Nothing is booked."

    assert_no_live_effects(world)
    assert_compensated_once(world)
    assert world.calls.get("book_flight") == 1  # bob's flight, after the failure: refused
    run = rac_run_of(handler)
    assert run is not None and run.status is RunStatus.COMPENSATED
    actions = [(r.tool, r.agent_id, str(r.status)) for r in run.records()
               if r.kind is RecordKind.ACTION]
    assert actions[:2] == [("book_flight", "coder", "compensated"),
                           ("book_car", "coder", "failed")]
    assert "execute" not in {r.tool for r in run.records()}


async def test_code_functions_need_an_enabled_agent() -> None:
    agent = CodeActAgent(name="coder", code_execute_fn=_executor({}),
                         llm=ScriptedModel(["ok"]).function_calling_llm(),
                         tools=world_tools(TravelWorld()))
    try:
        code_functions(agent)
    except rac.ConfigurationError as e:
        assert "enable_rac(agent" in str(e)
    else:
        raise AssertionError("code_functions accepted an agent RAC is not enabled on")


async def test_an_agent_used_as_a_tool_joins_the_run_and_its_rollback_is_heard() -> None:
    """The delegate's own call fails for good: the whole run (the parent's booking too) is
    rolled back, and the parent's model hears it through the delegating tool's output, though
    the delegate's model says nothing of it."""
    world, rac_engine = _world_without_cars()
    ask_driver = _agent_tool(world, rac_engine, "driver", [[("book_car", PAR_CAR)], "Done."])
    model = ScriptedModel([[("book_flight", PAR_FLIGHT)], [("ask_driver", {"request": "car"})],
                           "Sorry."])
    planner = enable_rac(FunctionAgent(
        name="planner", llm=model.function_calling_llm(),
        tools=[ask_driver, *world_tools(world)]), rac_engine, delegates=["ask_driver"])
    handler = planner.run(user_msg="trip")
    assert str(await handler) == "Sorry."

    assert_no_live_effects(world)
    run = rac_run_of(handler)
    assert run is not None and run.status is RunStatus.COMPENSATED
    assert [(r.tool, r.agent_id) for r in run.records() if r.kind is RecordKind.ACTION] == [
        ("book_flight", "planner"), ("book_car", "driver")]
    told = model.inputs[-1].tool_results()[-1]
    assert told.startswith("Done.") and "book_flight FL-101 (via cancel_flight)" in told, told


async def test_an_undeclared_agent_tool_is_named_in_a_warning() -> None:
    """Without ``delegates=`` the delegating call is logged as a side effect RAC cannot undo
    (the run ends needing attention, never clean); the log says which tool to declare."""
    world, rac_engine = _world_without_cars()
    ask_flights = _agent_tool(world, rac_engine, "flights",
                              [[("book_flight", PAR_FLIGHT)], "Booked."])
    planner = enable_rac(FunctionAgent(
        name="planner", llm=ScriptedModel([[("ask_flights", {"request": "fly"})],
                                           [("book_car", PAR_CAR)], "Sorry."])
        .function_calling_llm(), tools=[ask_flights, *world_tools(world)]), rac_engine)
    with capture_logs() as logs:
        handler = planner.run(user_msg="trip")
        await handler
    assert_no_live_effects(world)
    run = rac_run_of(handler)
    assert run is not None and run.status is RunStatus.NEEDS_ATTENTION
    [warning] = [e for e in logs if e["event"] == "rac_llamaindex.delegation"]
    assert warning["tool"] == "ask_flights" and "delegates=['ask_flights']" in warning["error"]
