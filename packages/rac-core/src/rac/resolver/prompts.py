"""The two questions RAC asks a model, as plain text prompts.

* Which tool undoes this one? (:func:`compensator_prompt`): the tool's name, description and
  schema, and the other tools on offer. Answer: ``{"compensator": "<tool>" | null}``.
* How are the compensator's arguments built? (:func:`mapping_prompt`): both tools, and the
  original call's arguments and result. Answer: ``{"args": {"<param>": "result.<field>"}}``.

Values shown to the model are redacted copies (:func:`rac.serialize.store_value`): secrets in
arguments and results never reach it; field names, which the mapping needs, do.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from rac.serialize import store_value
from rac.tools import Tool

#: Characters of a call's arguments or result shown to the model (longer values are capped).
SHOWN_CHARS = 4000


def describe(tool: Tool) -> dict[str, Any]:
    """A tool as the model sees it: name, description, parameters schema."""
    return {"name": tool.name, "description": tool.description or "",
            "parameters": tool.schema if tool.schema is not None else "unknown"}


def compensator_prompt(tool: Tool | None, name: str, candidates: Mapping[str, Tool]) -> str:
    """Ask which of ``candidates`` undoes a call of ``name``."""
    subject = describe(tool) if tool is not None else {"name": name, "description": "",
                                                       "parameters": "unknown"}
    others = [describe(t) for n, t in sorted(candidates.items()) if n != name]
    return (
        "You help an agent runtime undo side effects. A call of the tool below may have to be "
        "undone by calling another tool (its compensator).\n\n"
        f"Tool:\n{_json(subject)}\n\n"
        f"Other tools available:\n{_json(others)}\n\n"
        "Which one of the other tools undoes a successful call of the tool? Answer with JSON "
        'only: {"compensator": "<exact tool name>"}, or {"compensator": null} if none of them '
        "undoes it (for instance when the tool has no side effect). Do not invent tool names.")


def mapping_prompt(tool: Tool | None, name: str, compensator: Tool, args: Mapping[str, Any],
                   result: Any) -> str:
    """Ask how ``compensator``'s arguments are taken from a call of ``name``."""
    subject = describe(tool) if tool is not None else {"name": name}
    return (
        "You help an agent runtime undo side effects. The call below must be undone by calling "
        f"{compensator.name!r}. Say where each of its parameters comes from.\n\n"
        f"Original tool:\n{_json(subject)}\n\n"
        f"Compensating tool:\n{_json(describe(compensator))}\n\n"
        f"The original call's arguments:\n{_json(store_value(dict(args), SHOWN_CHARS))}\n\n"
        f"The original call's result:\n{_json(store_value(result, SHOWN_CHARS))}\n\n"
        "Answer with JSON only: "
        '{"args": {"<parameter of the compensating tool>": "<path>"}} where each path is '
        "'result' or 'args' followed by field names separated by dots, naming a field that "
        "exists above (for example 'result.booking_id' or 'args.passenger'). Map every "
        "required parameter and leave out 'idempotency_key'. Do not invent parameters or "
        "fields.")


def _json(value: Any) -> str:
    return json.dumps(value, indent=2, sort_keys=True, default=str, ensure_ascii=False)
