"""MCP declarations turned into RAC's: read, validated, judged for trust, registered.

:func:`declarations_from_mcp` reads a server's listed tools into :class:`MCPDeclarations`;
:func:`register_mcp_tools` (``engine.register_mcp_tools``) adds them to an engine;
:func:`register_offered_tools` is the one call an adapter makes with the tools an agent was
given, so MCP tools given to a framework the usual way are covered with no extra line.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from rac.errors import ConfigurationError, ResultError
from rac.events import emit
from rac.mcp import declarations as _decl
from rac.mcp.declarations import ToolDeclaration
from rac.mcp.errors import PLUGIN_NAME, MCPErrors
from rac.mcp.names import NameMap
from rac.mcp.reading import MCPToolView, is_langchain_tool, read_tool
from rac.mcp.trust import TrustVerdict, judge
from rac.registry import BeforeImage, Compensation, Irreversible, Lookup

if TYPE_CHECKING:
    from rac.engine import RAC

#: Key of ``engine.extensions`` holding what MCP declared (:class:`MCPState`).
STATE_KEY = "rac.mcp"


@dataclass(frozen=True)
class MCPTool:
    """One tool's declaration as RAC applies it, in the names the agent uses.

    ``lookup`` and ``before`` carry framework names too; ``verdict`` is the trust decision.
    """

    name: str
    mcp_name: str
    server: str | None
    trusted: bool
    declaration: ToolDeclaration
    verdict: TrustVerdict
    compensation: Compensation | None = None
    lookup: Lookup | None = None
    before: BeforeImage | None = None
    alternatives: tuple[str, ...] = ()


@dataclass
class MCPDeclarations:
    """What a server's tools declare, in the agent's names, after the trust decision.

    ``compensations``, ``alternatives`` and ``read_only`` are ready for
    ``rac.RAC(**declarations.as_kwargs())``; ``tools`` holds every tool's full declaration
    (effect class, irreversible, lookup, before-image) and ``claims_read_only`` the tools an
    untrusted server says are read-only and RAC keeps protecting.
    """

    server: str | None = None
    trusted: bool = False
    compensations: dict[str, Compensation] = field(default_factory=dict)
    alternatives: dict[str, list[str]] = field(default_factory=dict)
    read_only: list[str] = field(default_factory=list)
    claims_read_only: list[str] = field(default_factory=list)
    tools: dict[str, MCPTool] = field(default_factory=dict)

    @property
    def effects(self) -> dict[str, str]:
        """Tool -> effect class, for the tools whose effect class RAC takes from MCP."""
        return {n: t.verdict.effect for n, t in self.tools.items() if t.verdict.effect}

    @property
    def irreversible(self) -> list[str]:
        """Tools the server declares irreversible (no undo exists)."""
        return [n for n, t in self.tools.items() if t.declaration.irreversible]

    def as_kwargs(self) -> dict[str, Any]:
        """The declarations as keyword arguments of :class:`rac.RAC`."""
        return {"compensations": dict(self.compensations),
                "alternatives": {k: list(v) for k, v in self.alternatives.items()},
                "read_only": list(self.read_only)}


class _ListedNames(NameMap):
    """A name map that answers first from the listed tools' own names."""

    def __init__(self, listed: Mapping[str, str], fallback: NameMap) -> None:
        super().__init__()
        self._listed = dict(listed)
        self._fallback = fallback

    def framework_name(self, mcp_name: str) -> str:
        hit = self._listed.get(mcp_name)
        return hit if hit is not None else self._fallback.framework_name(mcp_name)


def _map_lookup(spec: Lookup | None, names: NameMap) -> Lookup | None:
    if spec is None:
        return None
    return spec.model_copy(update={"tool": names.framework_name(spec.tool)})


def _map_before(spec: BeforeImage | None, names: NameMap) -> BeforeImage | None:
    if spec is None:
        return None
    return spec.model_copy(update={"tool": names.framework_name(spec.tool)})


def declarations_from_mcp(tools: Iterable[Any], *, server: str | None = None,
                          trusted: bool = False, names: NameMap | None = None,
                          also_listed: Iterable[str] = ()) -> MCPDeclarations:
    """Read, validate and judge the declarations of one server's tools.

    ``tools`` are the server's listed tools in any shape :mod:`rac.mcp.reading` reads (mcp 1.x
    or 2.x ``Tool`` objects, their dicts, langchain-mcp-adapters' tools). Every tool a
    declaration names must be among them. ``server`` names the server in messages;
    ``trusted`` says whether its read-only and idempotency claims are believed (see
    :mod:`rac.mcp.trust`); ``names`` translates to the names the agent uses. ``also_listed``
    names tools that count as listed without being read here (tools RAC may call that the
    model is not offered, see :func:`register_offered_tools`).
    """
    names = names or NameMap()
    views: list[MCPToolView] = []
    for tool in tools:
        views.append(read_tool(tool, server=server, to_mcp=names.mcp_name,
                               to_framework=names.framework_name))
    names.learn(v.name for v in views)
    parsed = [_decl.parse(v.name, v.meta, v.annotations, v.input_schema, server=server)
              for v in views]
    _decl.validate(parsed, [*(v.name for v in views), *also_listed], server=server)
    # The names the agent uses for the server's tools, as the listing gives them (a name map
    # only translates names the listing does not carry).
    listed = {v.name: v.framework_name for v in views}
    names = _ListedNames(listed, names)
    out = MCPDeclarations(server=server, trusted=trusted)
    for view, decl in zip(views, parsed, strict=True):
        verdict = judge(decl, trusted=trusted)
        lookup, before = _map_lookup(decl.lookup, names), _map_before(decl.before, names)
        comp = None
        if decl.compensator is not None:
            comp = Compensation(tool=names.framework_name(decl.compensator),
                                args=dict(decl.args) if decl.args is not None else None,
                                lookup=lookup, before=before)
        alts = tuple(names.framework_name(a) for a in decl.alternatives)
        out.tools[view.framework_name] = MCPTool(
            name=view.framework_name, mcp_name=view.name, server=server, trusted=trusted,
            declaration=decl, verdict=verdict, compensation=comp, lookup=lookup, before=before,
            alternatives=alts)
        if comp is not None:
            out.compensations[view.framework_name] = comp
        if alts:
            out.alternatives[view.framework_name] = list(alts)
        if verdict.read_only:
            out.read_only.append(view.framework_name)
        if verdict.claims_read_only:
            out.claims_read_only.append(view.framework_name)
    return out


@dataclass
class MCPState:
    """What MCP declared on one engine (``engine.extensions["rac.mcp"]``): every tool's
    applied declaration, by the name the agent uses."""

    tools: dict[str, MCPTool] = field(default_factory=dict)
    #: LangChain tools offered to RAC and not to the model (compensators, lookups): they count
    #: as listed when the agent's tools' declarations are checked
    withheld: list[Any] = field(default_factory=list)


def state_of(engine: RAC) -> MCPState:
    """The MCP declarations registered on ``engine`` so far."""
    state = engine.extensions.get(STATE_KEY)
    if not isinstance(state, MCPState):
        state = engine.extensions[STATE_KEY] = MCPState()
    return state


def install_error_plugin(engine: RAC) -> None:
    """Register :class:`rac.mcp.MCPErrors` on ``engine`` once."""
    if engine.plugin_manager.get_plugin(PLUGIN_NAME) is None:
        engine.register_plugin(MCPErrors(), name=PLUGIN_NAME)


def apply(engine: RAC, found: MCPDeclarations, *, replace_code: bool = False) -> None:
    """Register ``found`` on ``engine``. A tool the engine already has a code declaration for
    keeps it (MCP metadata never overrides code); a tool MCP declared before is updated."""
    state = state_of(engine)
    registry = engine.registry
    install_error_plugin(engine)
    for name, tool in found.tools.items():
        from_mcp = name in state.tools
        if not from_mcp and not replace_code and (name in registry.pairs
                                                  or name in registry.read_only):
            emit("rac.mcp.kept_code_declaration", tool=name, server=found.server)
            continue
        state.tools[name] = tool
        if tool.compensation is not None:
            registry.add(name, tool.compensation)
        elif tool.lookup is not None:  # reconciled, though not undoable
            registry.add_lookup(name, tool.lookup)
        if tool.alternatives:
            registry.add_alternatives(name, tool.alternatives)
        if tool.verdict.read_only and name not in registry.pairs:
            registry.add_read_only(name)
        elif tool.verdict.effect not in (None, "read_only"):
            registry.set_effect(name, tool.verdict.effect)
        if tool.declaration.irreversible and name not in registry.irreversible:
            registry.set_irreversible(name, Irreversible.RUN)
        if tool.verdict.errors_before_effect:
            registry.declare_errors_before_effect(name, (ResultError,))
        if tool.verdict.claims_read_only:
            emit("rac.mcp.untrusted_read_only", level="warning", tool=name,
                 server=found.server, status="protected",
                 reason="the server says the tool is read-only, but it is not trusted: the "
                        "tool is protected like any side-effecting tool (pass trusted=True "
                        "to believe it)")
        for claim in tool.verdict.ignored:
            if "read_only" in claim or "readOnly" in claim:
                continue
            emit("rac.mcp.untrusted_hint", tool=name, server=found.server, hint=claim,
                 status="ignored")
    emit("rac.mcp.registered", server=found.server, trusted=found.trusted,
         tools=len(found.tools), pairs=len(found.compensations),
         read_only=len(found.read_only), claims_read_only=len(found.claims_read_only))


def register_mcp_tools(engine: RAC, tools: Iterable[Any], *, server: str | None = None,
                       trusted: bool = False, names: NameMap | None = None) -> MCPDeclarations:
    """Add what one MCP server's tools declare to ``engine`` (``engine.register_mcp_tools``).

    Returns the declarations. Raises :class:`rac.ConfigurationError` naming the server, the
    tool and the field when a declaration is malformed or names a tool the server does not
    list. Registers :class:`rac.mcp.MCPErrors` on the engine.
    """
    tools = list(tools)
    if not tools:
        emit("rac.mcp.registered", server=server, trusted=trusted, tools=0, pairs=0,
             read_only=0, claims_read_only=0)
        return MCPDeclarations(server=server, trusted=trusted)
    found = declarations_from_mcp(tools, server=server, trusted=trusted, names=names)
    apply(engine, found)
    return found


def _carries_mcp(tool: Any) -> bool:
    metadata = getattr(tool, "metadata", None)
    return isinstance(metadata, Mapping) and (
        "_meta" in metadata or any(k in metadata for k in ("readOnlyHint", "destructiveHint",
                                                           "idempotentHint", "openWorldHint")))


def register_offered_tools(engine: RAC, tools: Iterable[Any], *,
                           withheld: bool = False) -> MCPDeclarations | None:
    """Register the MCP declarations of the LangChain tools langchain-mcp-adapters built among
    ``tools`` (an adapter calls this with the tools it offers RAC).

    ``withheld=False``: ``tools`` are an agent's, offered to the model. ``withheld=True``: they
    are offered to RAC only, never bound to the model (compensators and lookups users hide from
    the LLM; :func:`rac.adapters.offer_to_rac` passes them here): they are kept, and count as
    listed whenever an agent's declarations are checked. A declaration may name any tool
    offered so far (the agent's, the withheld ones, or a tool registered with the engine).

    Tools already registered (by :meth:`rac.RAC.register_mcp_tools`, with their trust and
    server) keep that registration; the others are registered untrusted. Returns the new
    declarations, or None when no tool carries MCP metadata. A malformed declaration, or one
    naming a tool offered nowhere, raises :class:`rac.ConfigurationError`, as it would have
    from ``register_mcp_tools``.
    """
    offered = [t for t in tools if is_langchain_tool(t)]
    state = state_of(engine)
    if withheld:
        known = {id(t) for t in state.withheld}
        state.withheld.extend(t for t in offered if id(t) not in known)
    mcp_tools = [t for t in offered if _carries_mcp(t)]
    if not mcp_tools:
        return None
    if all(getattr(t, "name", None) in state.tools for t in mcp_tools):
        return None
    # The agent's tools, the withheld ones and the engine's are the listing the declarations
    # are checked against.
    seen = {id(t) for t in offered}
    listing = [*offered, *(t for t in state.withheld if id(t) not in seen)]
    try:
        found = declarations_from_mcp(listing, server=None, trusted=False,
                                      also_listed=engine.tools)
    except ConfigurationError as e:
        raise ConfigurationError(f"{e} (read from the MCP metadata of the agent's tools; give "
                                 "the tools the model is not offered to RAC with the adapter's "
                                 "tools=[...], or register them with "
                                 "engine.register_mcp_tools(tools, server=...) to name the "
                                 "server)") from None
    fresh = MCPDeclarations(server=None, trusted=False)
    for name, tool in found.tools.items():
        if name in state.tools:
            continue
        fresh.tools[name] = tool
        if tool.compensation is not None:
            fresh.compensations[name] = tool.compensation
        if tool.alternatives:
            fresh.alternatives[name] = list(tool.alternatives)
        if tool.verdict.read_only:
            fresh.read_only.append(name)
        if tool.verdict.claims_read_only:
            fresh.claims_read_only.append(name)
    apply(engine, fresh)
    return fresh
