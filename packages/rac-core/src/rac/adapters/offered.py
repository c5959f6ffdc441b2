"""Tools offered to RAC without being bound to the model: compensators, lookups, alternatives and
before-image reads that users hide from the LLM, given in code or as MCP tools.

Every adapter takes them the same way, as ``tools=[...]`` next to ``rac=`` or the keywords of
:class:`rac.RAC` (:func:`rac.adapters.engine_for` passes them here). RAC can call them; the model
is never offered them. Framework tools are converted with the adapter's ``convert_tool``;
LangChain tools built by langchain-mcp-adapters also keep their MCP metadata: their own
declarations are registered, and the declarations of the agent's MCP tools may name them (a
``book_flight`` whose ``_meta`` says ``cancel_flight`` undoes it, with ``cancel_flight`` withheld
from the model), instead of failing as naming a tool the server does not list.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from rac.engine import RAC
from rac.mcp import register_offered_tools


def offer_to_rac(engine: RAC, tools: Iterable[Any],
                 convert_tool: Callable[[Any], Any] | None = None) -> None:
    """Make ``tools`` callable by ``engine`` (never by the model), for compensations, lookups,
    alternatives and before-images.

    Each tool is passed through ``convert_tool`` first if given (a framework tool becomes a
    :class:`rac.Tool`), else the engine adapts it (a :class:`rac.Tool`, a plain function, or
    what a plugin's ``rac_adapt_tool`` takes). The MCP declarations the tools carry
    (langchain-mcp-adapters' tools) are read first, untrusted, and the tools count as listed
    when an agent's MCP declarations are checked later. Declarations that concern them are
    checked as they are added.

    Raises:
        rac.ConfigurationError: a declaration they carry is malformed or names a tool offered
            nowhere, or a declared compensation's mapping does not fit a tool's parameters.
    """
    raw = list(tools)
    if not raw:
        return
    register_offered_tools(engine, raw, withheld=True)
    engine.register_tools([convert_tool(t) for t in raw] if convert_tool else raw)
