"""Promise 1 of issue 30 in an AgentWorkflow: two agents whose tools share names (two vendors'
systems) are two sets of tools; a failure undoes each agent's booking through its own tools."""

from llama_index.core.agent.workflow import AgentWorkflow, FunctionAgent

from rac.models import RecordKind, RunStatus
from rac.testing import TravelWorld, assert_compensated_once, assert_no_live_effects
from rac_llamaindex import enable_rac, rac_run_of
from rac_llamaindex.testing import ScriptedModel
from tests.adapters.llamaindex.support import PAR_CAR, PAR_FLIGHT, engine, world_tools

TOOLS = ("book_flight", "cancel_flight", "book_car", "cancel_car")


async def test_two_agents_tools_of_one_name_each_undo_their_own_system() -> None:
    vendor_a, vendor_b = TravelWorld(), TravelWorld()
    vendor_b.fail("book_car", "permanent", message="no cars")
    model_a = ScriptedModel([[("book_flight", PAR_FLIGHT)],
                             [("handoff", {"to_agent": "vendor_b", "reason": "a car"})]])
    model_b = ScriptedModel([[("book_flight", PAR_FLIGHT)], [("book_car", PAR_CAR)],
                             "No car; both flights are cancelled."])
    a = FunctionAgent(name="vendor_a", description="Books with vendor A.",
                      llm=model_a.function_calling_llm(), tools=world_tools(vendor_a, TOOLS),
                      can_handoff_to=["vendor_b"])
    b = FunctionAgent(name="vendor_b", description="Books with vendor B.",
                      llm=model_b.function_calling_llm(), tools=world_tools(vendor_b, TOOLS))
    workflow = enable_rac(AgentWorkflow(agents=[a, b], root_agent="vendor_a"), engine())

    handler = workflow.run(user_msg="Fly ann with either vendor, and a car.")
    await handler

    for system in (vendor_a, vendor_b):  # each flight cancelled once, in its own system
        assert_no_live_effects(system)
        assert_compensated_once(system)
    run = rac_run_of(handler)
    assert run is not None and run.status is RunStatus.COMPENSATED
    assert [(r.tool, r.agent_id) for r in run.records() if r.kind is RecordKind.COMPENSATION
            ] == [("cancel_flight", "vendor_b"), ("cancel_flight", "vendor_a")]
    report = model_b.inputs[-1].tool_results()[-1]
    assert report.count("book_flight FL-101 (via cancel_flight)") == 2, report
