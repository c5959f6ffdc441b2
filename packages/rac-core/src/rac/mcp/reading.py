"""MCP tools as RAC reads them, whatever carries them.

Three shapes carry a tool's MCP description: the SDK's ``Tool`` objects (mcp 1.x: camelCase
attributes, ``meta`` for the wire ``_meta``; mcp 2.x: snake_case attributes such as
``input_schema`` and ``read_only_hint``), their JSON dicts (``tools/list`` as sent on the wire),
and the LangChain tools that langchain-mcp-adapters builds (``_meta`` and the flattened
annotations in ``StructuredTool.metadata``). Everything is read by attribute or key: this
module imports neither ``mcp`` nor any framework.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from rac.errors import ConfigurationError

#: The annotation names of the MCP specification, as sent on the wire.
ANNOTATION_KEYS = ("title", "readOnlyHint", "destructiveHint", "idempotentHint",
                   "openWorldHint")
_SNAKE = {"read_only_hint": "readOnlyHint", "destructive_hint": "destructiveHint",
          "idempotent_hint": "idempotentHint", "open_world_hint": "openWorldHint"}


@dataclass(frozen=True)
class MCPToolView:
    """One MCP tool as RAC reads it.

    ``name`` is the tool's name on its MCP server; ``framework_name`` the name the agent calls
    it by (different when a framework renames MCP tools, see :class:`rac.mcp.NameMap`).
    ``annotations`` uses the wire's camelCase keys and leaves out unset ones. ``shape`` says
    where it was read from: ``"mcp"`` (an SDK ``Tool``), ``"dict"`` or ``"langchain"``.
    """

    name: str
    framework_name: str
    meta: Mapping[str, Any] = field(default_factory=dict)
    annotations: Mapping[str, Any] = field(default_factory=dict)
    input_schema: Mapping[str, Any] = field(default_factory=dict)
    shape: str = "mcp"


def _plain(obj: Any) -> dict[str, Any]:
    """A mapping, pydantic model or plain object as a dict with wire (camelCase) keys and
    without unset values."""
    if obj is None:
        return {}
    if isinstance(obj, Mapping):
        raw = dict(obj)
    else:
        dump = getattr(obj, "model_dump", None)
        if callable(dump):
            raw = dump(by_alias=True, exclude_none=True)
        elif hasattr(obj, "__dict__"):
            raw = {k: v for k, v in vars(obj).items() if not k.startswith("_")}
        else:
            raise TypeError(type(obj).__name__)
    return {_SNAKE.get(k, k): v for k, v in raw.items() if v is not None}


def _attr(obj: Any, *names: str) -> Any:
    for name in names:
        value = getattr(obj, name, None)
        if value is not None:
            return value
    return None


def is_langchain_tool(obj: Any) -> bool:
    """True if ``obj`` looks like a LangChain tool (a ``metadata`` mapping and an
    ``args_schema``, and no MCP ``inputSchema``)."""
    return (not isinstance(obj, Mapping) and hasattr(obj, "args_schema")
            and hasattr(obj, "metadata") and not hasattr(obj, "inputSchema"))


def read_tool(obj: Any, *, server: str | None = None, to_mcp: Any = None,
              to_framework: Any = None) -> MCPToolView:
    """Read one tool in any of the shapes the module docstring lists.

    ``to_mcp``/``to_framework`` translate names (see :class:`rac.mcp.NameMap`): a LangChain
    tool carries its framework name, an SDK tool or a dict its MCP name.
    Raises :class:`rac.ConfigurationError` naming the server when ``obj`` is none of them.
    """
    where = f"MCP server {server!r}" if server else "MCP tools"
    if isinstance(obj, Mapping):
        name = obj.get("name")
        meta = obj.get("_meta", obj.get("meta"))
        annotations = obj.get("annotations")
        schema = obj.get("inputSchema", obj.get("input_schema"))
        shape = "dict"
    elif is_langchain_tool(obj):
        framework = getattr(obj, "name", None)
        if not isinstance(framework, str) or not framework:
            raise ConfigurationError(f"{where}: a LangChain tool without a name: {obj!r}")
        metadata = getattr(obj, "metadata", None) or {}
        if not isinstance(metadata, Mapping):
            metadata = {}
        schema = getattr(obj, "args_schema", None)
        mcp_name = to_mcp(framework) if to_mcp is not None else framework
        return MCPToolView(
            name=mcp_name or framework, framework_name=framework,
            meta=_checked_meta(metadata.get("_meta"), where, framework),
            annotations={k: v for k, v in metadata.items() if k != "_meta" and v is not None},
            input_schema=schema if isinstance(schema, Mapping) else {}, shape="langchain")
    elif hasattr(obj, "name") and (hasattr(obj, "inputSchema") or hasattr(obj, "input_schema")
                                   or hasattr(obj, "annotations")):
        name = obj.name
        meta = _attr(obj, "meta", "_meta")
        annotations = getattr(obj, "annotations", None)
        schema = _attr(obj, "inputSchema", "input_schema")
        shape = "mcp"
    else:
        raise ConfigurationError(
            f"{where}: cannot read {type(obj).__name__} {obj!r} as an MCP tool; pass the "
            "tools of `(await session.list_tools()).tools`, their dicts, or the LangChain tools "
            "of langchain-mcp-adapters")
    if not isinstance(name, str) or not name:
        raise ConfigurationError(f"{where}: an MCP tool without a name: {obj!r}")
    try:
        ann = _plain(annotations)
    except TypeError:
        raise ConfigurationError(f"{where}, tool {name!r}: field 'annotations' must be an "
                                 f"object, got {type(annotations).__name__}") from None
    framework = to_framework(name) if to_framework is not None else name
    return MCPToolView(name=name, framework_name=framework or name,
                       meta=_checked_meta(meta, where, name), annotations=ann,
                       input_schema=dict(schema) if isinstance(schema, Mapping) else {},
                       shape=shape)


def _checked_meta(meta: Any, where: str, name: str) -> Mapping[str, Any]:
    if meta is None:
        return {}
    if not isinstance(meta, Mapping):
        raise ConfigurationError(f"{where}, tool {name!r}: field '_meta' must be an object, "
                                 f"got {type(meta).__name__}")
    return meta
