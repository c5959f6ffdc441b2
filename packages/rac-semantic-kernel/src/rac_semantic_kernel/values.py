"""Function results as RAC logs and maps them: Semantic Kernel content made plain.

A native function's value is kept as it is. Content objects (what MCP and prompt functions
return) become their text, and a text that is a JSON object or array becomes that value, so a
compensation can map ``result.booking_id`` from an MCP tool's answer.
"""

from __future__ import annotations

import json
from typing import Any

from semantic_kernel.contents import ChatMessageContent, TextContent
from semantic_kernel.functions import FunctionResult


def _text(value: Any) -> str | None:
    if isinstance(value, TextContent | ChatMessageContent):
        return str(value.content if isinstance(value, ChatMessageContent) else value.text)
    return None


def _parsed(text: str) -> Any:
    stripped = text.strip()
    if stripped[:1] in ("{", "["):
        try:
            return json.loads(stripped)
        except ValueError:
            return text
    return text


_PLAIN = (dict, str, int, float, bool, type(None))


def plain_value(value: Any) -> Any:
    """``value`` (a function's result) as RAC records it."""
    if type(value) in _PLAIN:  # a native function's usual result (and the hot path)
        return value
    if isinstance(value, FunctionResult):
        value = value.value
    text = _text(value)
    if text is not None:
        return _parsed(text)
    if isinstance(value, list) and value and all(_text(v) is not None for v in value):
        texts = [t for t in (_text(v) for v in value) if t is not None]
        return _parsed(texts[0]) if len(texts) == 1 else [_parsed(t) for t in texts]
    return value
