"""Reading a model's answer, and refusing everything that is not a checked fact.

The model answers in JSON (see :mod:`rac.resolver.prompts`). An answer is turned into a
proposal only when it holds up against what RAC knows: the compensator is one of the tools on
offer (not the tool itself, not a read-only tool), and a mapping fills every required parameter
of the compensator, names no parameter the compensator does not have, and points each one at a
field that exists in this call's arguments or result, with a value of the type the
compensator's schema asks for. Anything else raises :class:`NoProposal` with the reason.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from rac.errors import CompensationMappingError, ConfigurationError
from rac.mapping import IDEMPOTENCY_PARAM, resolve_path
from rac.registry import parse_path
from rac.tools import Tool


class NoProposal(Exception):
    """The model gave no usable proposal; the message says why."""


_FENCE = re.compile(r"^```(?:json)?\s*\n(.*?)\n?```$", re.DOTALL)
_JSON_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,), "integer": (int,), "number": (int, float), "boolean": (bool,),
    "object": (dict,), "array": (list, tuple), "null": (type(None),)}


def parse_answer(text: str) -> dict[str, Any]:
    """The JSON object in ``text`` (bare, or alone in one fenced code block)."""
    body = text.strip()
    fenced = _FENCE.match(body)
    if fenced:
        body = fenced.group(1).strip()
    try:
        data = json.loads(body)
    except json.JSONDecodeError as e:
        raise NoProposal(f"the answer is not JSON ({e.msg} at character {e.pos}): "
                         f"{_excerpt(text)}") from None
    if not isinstance(data, dict):
        raise NoProposal(f"the answer is JSON but not an object: {_excerpt(text)}")
    return data


def compensator_of(answer: Mapping[str, Any], tool: str, candidates: Mapping[str, Tool],
                   read_only: set[str]) -> str | None:
    """The compensator the answer names, checked; None when the model says there is none."""
    if "compensator" not in answer:
        raise NoProposal(f"the answer has no field 'compensator' (fields: {sorted(answer)})")
    name = answer["compensator"]
    if name is None:
        return None
    if not isinstance(name, str) or not name:
        raise NoProposal(f"field 'compensator' must be a tool name or null, got {name!r}")
    if name == tool:
        raise NoProposal(f"the model proposed {tool!r} as its own compensator")
    if name not in candidates:
        raise NoProposal(f"the model proposed {name!r}, which is not one of the tools "
                         f"({sorted(candidates)})")
    if name in read_only:
        raise NoProposal(f"the model proposed {name!r}, which is declared read-only")
    return name


def mapping_of(answer: Mapping[str, Any], compensator: Tool, args: Mapping[str, Any],
               result: Any) -> dict[str, str]:
    """The argument mapping the answer gives, checked against the compensator's schema and
    against this call's arguments and result."""
    spec = answer.get("args")
    if not isinstance(spec, dict) or not all(isinstance(k, str) and isinstance(v, str)
                                            for k, v in spec.items()):
        raise NoProposal(f"field 'args' must map parameter names to paths such as "
                         f"'result.booking_id', got {_excerpt(json.dumps(spec, default=str))}")
    if compensator.params is None:
        raise NoProposal(f"the parameters of {compensator.name!r} are unknown: a mapping "
                         "cannot be checked against them")
    props = compensator.schema.get("properties", {}) if compensator.schema else {}
    unknown = sorted(set(spec) - set(compensator.params))
    if unknown:
        raise NoProposal(f"{compensator.name!r} has no parameter(s) {unknown} "
                         f"(its parameters: {compensator.params})")
    if IDEMPOTENCY_PARAM in spec:
        raise NoProposal(f"the model mapped {IDEMPOTENCY_PARAM!r}, which RAC fills itself")
    missing = [p for p in compensator.required if p not in spec and p != IDEMPOTENCY_PARAM]
    if missing:
        raise NoProposal(f"required parameter(s) {missing} of {compensator.name!r} are not "
                         "mapped")
    for param, path in spec.items():
        secret = secret_path(path)
        if secret is not None:
            raise NoProposal(f"parameter {param!r} -> {path!r} reads {secret!r}, a secret: "
                             "RAC never hands a secret to a compensator through a mapping "
                             "nobody wrote (it would be stored in clear under a plain name)")
        try:
            parse_path(path, tool=compensator.name, param=param)
            value = resolve_path(path, args, result, tool=compensator.name, param=param)
        except (ConfigurationError, CompensationMappingError) as e:
            raise NoProposal(f"parameter {param!r} -> {path!r}: {e}") from None
        wanted = props.get(param, {}).get("type") if isinstance(props.get(param), dict) else None
        if not _has_type(value, wanted):
            raise NoProposal(f"parameter {param!r} -> {path!r} is a {type(value).__name__}, "
                             f"but {compensator.name!r} takes {wanted!r}")
    return dict(spec)


def secret_path(path: str) -> str | None:
    """The secret-named field ``path`` reads (``args.api_key``, ``result.auth.token``), or
    None."""
    from rac.serialize import is_secret_key

    for part in re.split(r"[.\[\]]+", path):
        if part and not part.isdigit() and is_secret_key(part):
            return part
    return None


def _has_type(value: Any, wanted: Any) -> bool:
    """True if ``value`` fits the JSON schema ``type`` ``wanted`` (anything fits no type)."""
    if wanted is None:
        return True
    names = wanted if isinstance(wanted, list) else [wanted]
    for name in names:
        types = _JSON_TYPES.get(name) if isinstance(name, str) else None
        if types is None:
            return True  # a type RAC does not check
        if isinstance(value, bool) and name in ("integer", "number"):
            continue
        if isinstance(value, types):
            return True
    return False


def _excerpt(text: str, limit: int = 200) -> str:
    text = text.strip()
    return repr(text if len(text) <= limit else text[:limit] + "...")
