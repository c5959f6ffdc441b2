"""A framework tool's parameter names and JSON schema, from its JSON schema or its pydantic
model."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def params_from_schema(schema: Any) -> tuple[list[str] | None, list[str]]:
    """The parameter names a schema declares and the required ones.

    ``schema`` is a JSON object schema (a mapping with ``properties``), a pydantic model class
    or instance, or None. The result is what :class:`rac.Tool` takes as ``params`` and
    ``required``: ``(None, [])`` when the names cannot be known (no schema, an exotic one), so
    RAC maps compensation arguments by their declared paths only.
    """
    if schema is None:
        return None, []
    if not isinstance(schema, Mapping):
        fields = getattr(schema, "model_fields", None)
        if isinstance(fields, Mapping):
            return list(fields), [n for n, f in fields.items() if f.is_required()]
        schema = json_schema_of(schema)
        if schema is None:
            return None, []
    props = schema.get("properties")
    if not isinstance(props, Mapping) or not all(isinstance(k, str) for k in props):
        return None, []
    required = schema.get("required") or ()
    if not isinstance(required, list | tuple):
        required = ()
    return list(props), [str(r) for r in required if r in props]


def json_schema_of(schema: Any) -> dict[str, Any] | None:
    """The JSON object schema ``schema`` stands for: a mapping with ``properties`` as given, a
    pydantic model class or instance as its ``model_json_schema()`` (argument types,
    descriptions, defaults); None when there is none (no schema, an exotic one)."""
    if schema is None:
        return None
    if not isinstance(schema, Mapping):
        to_json = getattr(schema, "model_json_schema", None)
        if not callable(to_json):
            return None
        try:
            schema = to_json()
        except Exception:  # noqa: BLE001 - an exotic schema: there is none to keep
            return None
        if not isinstance(schema, Mapping):
            return None
    return dict(schema) if isinstance(schema.get("properties"), Mapping) else None
