"""Tools an agent gets from its ``tool_retriever`` (retrieved per step, never in ``tools``) run
under RAC like its own."""

from __future__ import annotations

from llama_index.core.agent.workflow import FunctionAgent
from llama_index.core.objects.base import ObjectRetriever
from llama_index.core.schema import QueryBundle
from llama_index.core.tools import FunctionTool

from rac.models import RunStatus
from rac.testing import TravelWorld
from rac_llamaindex import RACFunctionTool, enable_rac, rac_run_of
from rac_llamaindex.testing import ScriptedModel
from tests.adapters.llamaindex.support import PAR_FLIGHT, PAR_HOTEL, engine, world_tools


class ToolShelf(ObjectRetriever[FunctionTool]):
    """A retriever that finds every tool on its shelf, whatever the query (a vector index of
    tools answers the same way, given a query that matches them all)."""

    def __init__(self, tools: list[FunctionTool]) -> None:
        self.tools = tools
        self.queries: list[str] = []

    def retrieve(self, str_or_query_bundle: str | QueryBundle) -> list[FunctionTool]:
        self.queries.append(str(str_or_query_bundle))
        return list(self.tools)

    async def aretrieve(self, str_or_query_bundle: str | QueryBundle) -> list[FunctionTool]:
        return self.retrieve(str_or_query_bundle)


async def test_retrieved_tools_are_guarded_and_compensated() -> None:
    world = TravelWorld()
    world.fail("book_hotel", "permanent", message="full")
    shelf = ToolShelf(world_tools(world))
    model = ScriptedModel([[("book_flight", PAR_FLIGHT)], [("book_hotel", PAR_HOTEL)],
                           "No hotel; nothing is booked."])
    agent = enable_rac(FunctionAgent(name="travel", llm=model.function_calling_llm(),
                                     tool_retriever=shelf), engine())
    retrieved = await agent.get_tools("book")
    assert all(isinstance(t, RACFunctionTool) for t in retrieved)
    assert [t.metadata for t in retrieved] == [t.metadata for t in shelf.tools]
    assert await agent.get_tools("again") == retrieved  # one wrapper per tool, kept

    handler = agent.run(user_msg="trip")
    assert str(await handler) == "No hotel; nothing is booked."
    assert world.live() == []
    assert "Undone, newest first: book_flight FL-101 (via cancel_flight)" in \
        model.inputs[2].tool_results()[-1]
    run = rac_run_of(handler)
    assert run is not None and run.status is RunStatus.COMPENSATED
    assert {r.agent_id for r in run.records()} == {"travel"}
