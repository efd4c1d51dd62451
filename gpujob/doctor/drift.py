"""Where a body parts from the shape a wire model expects: each field the model reads, checked for
presence and type, recursively. The wire models themselves are lenient (unknown keys ignored, nulls read
as defaults, numbers in strings accepted) so a change never breaks a listing at once; this is the strict
reading that says what changed, so it can be fixed before it does.

A drift is (path, expected, got): `pods[*].ports: expected list[str], got string "22/tcp"`.
"""

from __future__ import annotations

import types
from dataclasses import dataclass
from datetime import datetime
from typing import Annotated, Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel
from pydantic.fields import FieldInfo

from gpujob.model import WireModel

MAX_ITEMS = 200  # a list longer than this is checked on its first items: drift is about shape, not data


@dataclass(frozen=True)
class Drift:
    path: str
    expected: str
    got: str

    def __str__(self) -> str:
        return f"{self.path}: expected {self.expected}, got {self.got}"


def drifts(model: type[WireModel], body: Any, path: str = "") -> list[Drift]:
    """Every drift of `body` from `model`, each field path once ([*] for list items)."""
    seen: dict[tuple[str, str], Drift] = {}
    for d in _object(model, body, path):
        seen.setdefault((d.path, d.expected), d)
    return list(seen.values())


def _object(model: type[BaseModel], body: Any, path: str) -> list[Drift]:
    if not isinstance(body, dict):
        return [Drift(path or "$", "object", _got(body))]
    optional: frozenset[str] = getattr(model, "wire_optional", frozenset())
    out: list[Drift] = []
    for name, info in model.model_fields.items():
        key = info.alias or name
        where = f"{path}.{key}" if path else key
        if key not in body:
            if key not in optional:
                out.append(Drift(where, _name(info.annotation), "missing"))
            continue
        out += _value(info.annotation, body[key], where, lenient=_lenient(info))
    return out


def _value(annotation: Any, value: Any, path: str, *, lenient: bool = False) -> list[Drift]:
    if get_origin(annotation) is Annotated:
        return _value(get_args(annotation)[0], value, path, lenient=True)
    if value is None:
        # Null where gpujob has a default reads as that default (WireModel): tolerated, not drift.
        return []
    if annotation is Any or annotation is object:
        return []
    origin = get_origin(annotation)
    if origin in (Union, types.UnionType):
        arms = [a for a in get_args(annotation) if a is not type(None)]
        found = [_value(a, value, path, lenient=lenient) for a in arms]
        return [] if any(not f for f in found) else found[0]
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return _object(annotation, value, path)
    if origin is list:
        if not isinstance(value, list):
            return [Drift(path, _name(annotation), _got(value))]
        (item,) = get_args(annotation) or (Any,)
        return [d for v in value[:MAX_ITEMS] for d in _value(item, v, f"{path}[*]")]
    if origin is dict:
        return [] if isinstance(value, dict) else [Drift(path, "object", _got(value))]
    if origin is Literal:
        return [] if value in get_args(annotation) else [Drift(path, _name(annotation), _got(value))]
    return [] if _scalar_ok(annotation, value, lenient) else [Drift(path, _name(annotation), _got(value))]


def _scalar_ok(annotation: Any, value: Any, lenient: bool) -> bool:
    if lenient and isinstance(value, str):
        try:
            float(value)
        except ValueError:
            return False
        return True
    if annotation is bool:
        return isinstance(value, bool)
    if annotation is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if annotation is float:
        return isinstance(value, int | float) and not isinstance(value, bool)
    if annotation is str:
        return isinstance(value, str)
    if annotation is datetime:
        if not isinstance(value, str):
            return False
        try:
            datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            return False
        return True
    return True  # a type this checker does not know: the model's own validation decides


def _lenient(info: FieldInfo) -> bool:
    """Fields typed LenientInt / LenientFloat take numbers sent as strings (gpujob.providers.lenient)."""
    return any(type(m).__name__ == "BeforeValidator" for m in info.metadata)


def _name(annotation: Any) -> str:
    if get_origin(annotation) is Annotated:
        return _name(get_args(annotation)[0])
    origin = get_origin(annotation)
    if origin in (Union, types.UnionType):
        arms = [_name(a) for a in get_args(annotation) if a is not type(None)]
        return " | ".join(arms) + (" | null" if type(None) in get_args(annotation) else "")
    if origin is list:
        return f"list[{_name(get_args(annotation)[0])}]"
    if origin is dict:
        return "object"
    if origin is Literal:
        return " | ".join(repr(a) for a in get_args(annotation))
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return "object"
    names = {str: "string", int: "integer", float: "number", bool: "boolean", datetime: "date-time string"}
    return names.get(annotation, getattr(annotation, "__name__", str(annotation)))


def _got(value: Any) -> str:
    """What arrived, without its content when it is text: a drifted field may hold anything (a pod's env
    written outside gpujob can hold a secret), and doctor output is meant to be pasted into bug reports."""
    if isinstance(value, str):
        return f"string ({len(value)} chars)"
    if isinstance(value, bool | int | float):
        return f"{type(value).__name__.replace('bool', 'boolean').replace('int', 'integer')} {value!r}"
    if isinstance(value, list):
        return f"list ({len(value)} items)"
    return "object" if isinstance(value, dict) else type(value).__name__
