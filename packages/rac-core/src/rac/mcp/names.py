"""Names of MCP tools as frameworks rename them.

Some frameworks give an MCP tool another name than its server does: langchain-mcp-adapters
with ``tool_name_prefix=True`` (``<server>_<tool>``), CrewAI's ``Agent(mcps=...)``
(a sanitised ``<server>_<tool>``), Semantic Kernel's MCP plugins (characters other than
letters, digits, ``_``, ``.`` and ``-`` replaced by ``-``). The declarations in a server's
metadata always use the server's names; a :class:`NameMap` says what the agent calls them, so
RAC registers each pair under the names the agent's calls carry.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

_SK_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]")


class NameMap:
    """Translates between the MCP names of a server's tools and the names an agent uses.

    Build one from a mapping ``{mcp_name: framework_name}``, a function ``mcp_name ->
    framework_name``, or one of the constructors below. Names it does not know translate to
    themselves.

    Example::

        names = rac.mcp.NameMap.prefixed("travel")      # tool_name_prefix=True
        engine.register_mcp_tools(tools, server="travel", names=names)
    """

    def __init__(self, mapping: Mapping[str, str] | Callable[[str], str] | None = None) -> None:
        self._forward: dict[str, str] = {}
        self._fn: Callable[[str], str] | None = None
        if callable(mapping) and not isinstance(mapping, Mapping):
            self._fn = mapping
        elif mapping is not None:
            self._forward = dict(mapping)
        self._backward: dict[str, str] = {v: k for k, v in self._forward.items()}
        self._strip: str | None = None

    # -- constructors -------------------------------------------------------------------------
    @classmethod
    def prefixed(cls, prefix: str, sep: str = "_") -> NameMap:
        """``<prefix><sep><tool>``: langchain-mcp-adapters' ``tool_name_prefix=True`` (the
        prefix is the server's key in ``MultiServerMCPClient``)."""
        head = f"{prefix}{sep}"
        names = cls(lambda name: head + name)
        names._strip = head
        return names

    @classmethod
    def semantic_kernel(cls, plugin: str | None = None, sep: str = "-") -> NameMap:
        """Semantic Kernel's MCP plugins: unsafe characters become ``-``; with ``plugin``, the
        fully qualified ``<plugin>-<function>`` name."""
        head = f"{plugin}{sep}" if plugin else ""
        return cls(lambda name: head + _SK_UNSAFE.sub("-", name))

    @classmethod
    def from_tools(cls, tools: Iterable[Any], *, original: str = "original_tool_name",
                   name: str = "name") -> NameMap:
        """From framework tool objects that remember their MCP name in an attribute (CrewAI's
        ``MCPNativeTool.original_tool_name``)."""
        mapping: dict[str, str] = {}
        for tool in tools:
            mcp_name, framework = getattr(tool, original, None), getattr(tool, name, None)
            if isinstance(mcp_name, str) and isinstance(framework, str):
                mapping[mcp_name] = framework
        return cls(mapping)

    # -- translation --------------------------------------------------------------------------
    def framework_name(self, mcp_name: str) -> str:
        """The name the agent calls the server's tool ``mcp_name`` by."""
        hit = self._forward.get(mcp_name)
        if hit is not None:
            return hit
        return self._fn(mcp_name) if self._fn is not None else mcp_name

    def mcp_name(self, framework_name: str) -> str:
        """The server's name of the tool the agent calls ``framework_name`` (best effort for a
        function map: exact for mappings, prefixes and names seen by
        :meth:`framework_name` or :meth:`learn`)."""
        hit = self._backward.get(framework_name)
        if hit is not None:
            return hit
        if self._strip is not None and framework_name.startswith(self._strip):
            return framework_name[len(self._strip):]
        return framework_name

    def learn(self, mcp_names: Iterable[str]) -> None:
        """Remember the translation of these MCP names, so :meth:`mcp_name` inverts them."""
        for name in mcp_names:
            self._backward.setdefault(self.framework_name(name), name)

    def __repr__(self) -> str:
        if self._strip is not None:
            return f"NameMap.prefixed({self._strip!r})"
        return f"NameMap({self._forward or self._fn!r})"
