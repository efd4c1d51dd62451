"""Derive gpujob/spec/fastrules.json, the table `gpujob validate`'s fast path checks job files with
(gpujob.spec.fastcheck), from the pydantic models in gpujob/jobfile/model.py (`make schemas` runs it).

    python -m gpujob.spec.fastgen           write gpujob/spec/fastrules.json
    python -m gpujob.spec.fastgen --check   exit 1 when the committed table is stale

The table names, per model, every field with its type and constraints, whether it is required, its
default, and the validators that run on it; and the sha256 of the model sources it was made from, so
the fast path switches itself off when they changed since. Whatever this module does not know how to
turn into a rule it refuses (GeneratorError): a new kind of type, constraint or model setting must be
taught to the fast check as well, never skipped.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import sys
import types
import typing
from datetime import timedelta
from pathlib import Path
from typing import Any

import annotated_types
from pydantic import AwareDatetime, BaseModel, BeforeValidator, PlainSerializer, WithJsonSchema

FORMAT = 1
TABLE = Path(__file__).with_name("fastrules.json")
PACKAGE = Path(__file__).resolve().parent.parent
# The files the table is derived from (relative to the package's parent), hashed into it.
SOURCES = (
    "gpujob/model.py",
    "gpujob/jobfile/model.py",
    "gpujob/jobfile/machine.py",
    "gpujob/jobfile/durations.py",
    "gpujob/jobfile/run.py",
)
# Model settings that do not change what validates (frozen: no assignment after; extra is handled).
_NEUTRAL_CONFIG = {"extra", "frozen"}
_BOUNDS = {
    annotated_types.Ge: "ge",
    annotated_types.Gt: "gt",
    annotated_types.Le: "le",
    annotated_types.Lt: "lt",
}
_LENGTHS = {annotated_types.MinLen: "min_length", annotated_types.MaxLen: "max_length"}
# Regular expression syntax that reads the same in Python's re and in pydantic's Rust regex engine.
_PATTERN_CHARS = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789^$[]()*+?|-/_.")


class GeneratorError(Exception):
    """The models use something the fast check has no rule for."""


def source_digests() -> dict[str, str]:
    return {rel: hashlib.sha256((PACKAGE.parent / rel).read_bytes()).hexdigest() for rel in SOURCES}


def _constraints(metadata: list[Any], where: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for item in metadata:
        kind = type(item)
        if kind in _BOUNDS:
            out[_BOUNDS[kind]] = getattr(item, _BOUNDS[kind])
        elif kind in _LENGTHS:
            out[_LENGTHS[kind]] = getattr(item, _LENGTHS[kind])
        elif kind.__name__ == "_PydanticGeneralMetadata" and set(vars(item)) == {"pattern"}:
            pattern = item.pattern
            if not isinstance(pattern, str) or not set(pattern) <= _PATTERN_CHARS:
                raise GeneratorError(f"{where}: pattern {pattern!r} uses syntax the fast check does not read")
            out["pattern"] = pattern
        else:
            raise GeneratorError(f"{where}: no fast rule for the constraint {item!r}")
    return out


def _duration_rule(metadata: list[Any]) -> dict[str, Any] | None:
    """The fast rule of a duration type (parse_duration, or parse_measured with its lower minimum)."""
    from gpujob.jobfile.rules import MEASURED_MIN_S, parse_duration, parse_measured

    befores = [m for m in metadata if isinstance(m, BeforeValidator)]
    rest = [m for m in metadata if not isinstance(m, BeforeValidator | PlainSerializer | WithJsonSchema)]
    if len(befores) != 1 or rest:
        return None
    if befores[0].func is parse_duration:
        return {"kind": "duration"}
    if befores[0].func is parse_measured:
        return {"kind": "duration", "minimum_s": MEASURED_MIN_S}
    return None


def _type(
    annotation: Any, constraints: dict[str, Any], where: str, todo: list[type[BaseModel]]
) -> dict[str, Any]:
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin in (typing.Union, types.UnionType):
        branches = [a for a in args if a is not type(None)]
        if constraints and len(branches) != 1:
            raise GeneratorError(f"{where}: constraints on a union of several types")
        out = [_type(a, constraints, where, todo) for a in branches]
        if len(branches) < len(args):
            out.append({"kind": "none"})
        return out[0] if len(out) == 1 else {"kind": "union", "of": out}
    if origin is typing.Annotated:
        base, *metadata = args
        rule = _duration_rule(metadata) if base is timedelta and not constraints else None
        if rule is not None:
            return rule
        raise GeneratorError(f"{where}: no fast rule for {annotation!r}")
    if origin is typing.Literal:
        if constraints or not all(type(v) in (str, int) for v in args):
            raise GeneratorError(f"{where}: no fast rule for {annotation!r}")
        return {"kind": "literal", "values": list(args)}
    if origin is list:
        _only(constraints, {"min_length", "max_length"}, where)
        return {"kind": "list", "items": _type(args[0], {}, where + "[]", todo), **constraints}
    if origin is dict:
        _only(constraints, set(), where)
        return {
            "kind": "dict",
            "keys": _type(args[0], {}, where + ".<key>", todo),
            "values": _type(args[1], {}, where + ".<value>", todo),
        }
    if annotation is str:
        _only(constraints, {"min_length", "max_length", "pattern"}, where)
        return {"kind": "str", **constraints}
    if annotation in (int, float):
        _only(constraints, {"ge", "gt", "le", "lt"}, where)
        return {"kind": annotation.__name__, **constraints}
    if annotation is bool:
        _only(constraints, set(), where)
        return {"kind": "bool"}
    if annotation is AwareDatetime:
        _only(constraints, set(), where)
        return {"kind": "instant"}
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        _only(constraints, set(), where)
        todo.append(annotation)
        return {"kind": "model", "name": annotation.__name__}
    raise GeneratorError(f"{where}: no fast rule for {annotation!r}")


def _only(constraints: dict[str, Any], allowed: set[str], where: str) -> None:
    extra = set(constraints) - allowed
    if extra:
        raise GeneratorError(f"{where}: no fast rule for {sorted(extra)} here")


def _source_hash(func: Any) -> str:
    return hashlib.sha256(inspect.getsource(func).encode()).hexdigest()[:16]


def _default(field: Any) -> Any:
    value = field.get_default(call_default_factory=True)
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    json.dumps(value)  # only plain data can be a default here
    return value


def _model(model: type[BaseModel], todo: list[type[BaseModel]]) -> dict[str, Any]:
    name = model.__name__
    config = dict(model.model_config)
    if config.get("extra") != "forbid" or set(config) - _NEUTRAL_CONFIG:
        raise GeneratorError(f"{name}: model settings {config} have no fast rule")
    decorators = model.__pydantic_decorators__
    if decorators.validators or decorators.root_validators:
        raise GeneratorError(f"{name}: pydantic v1 validators have no fast rule")
    if model.__pydantic_post_init__ is not None or "__get_pydantic_core_schema__" in vars(model):
        raise GeneratorError(f"{name}: custom initialisation has no fast rule")
    fields: dict[str, Any] = {}
    for field_name, field in model.model_fields.items():
        where = f"{name}.{field_name}"
        if field.alias or field.validation_alias or field.discriminator or field.validate_default:
            raise GeneratorError(f"{where}: aliases, discriminators and validated defaults have no fast rule")
        entry: dict[str, Any] = {
            "type": _type(field.annotation, _constraints(field.metadata, where), where, todo)
        }
        entry["required"] = field.is_required()
        if not field.is_required():
            entry["default"] = _default(field)
        fields[field_name] = entry
    for key, on_field in decorators.field_validators.items():
        mode = on_field.info.mode
        if mode not in ("before", "after"):
            raise GeneratorError(f"{name}.{key}: a {mode} field validator has no fast rule")
        for field_name in on_field.info.fields:
            if field_name not in fields:
                raise GeneratorError(f"{name}.{key}: a validator of {field_name!r} has no fast rule")
            entry = fields[field_name]
            entry.setdefault(mode, []).append(
                {"name": f"{name}.{key}", "source": _source_hash(on_field.func)}
            )
            if len(entry.get("before", [])) > 1:
                raise GeneratorError(f"{name}.{field_name}: several before-validators have no fast rule")
    validators = []
    for key, on_model in decorators.model_validators.items():
        if on_model.info.mode != "after":
            raise GeneratorError(f"{name}.{key}: a {on_model.info.mode} model validator has no fast rule")
        validators.append({"name": f"{name}.{key}", "source": _source_hash(on_model.func)})
    return {"fields": fields, "validators": validators}


def table() -> dict[str, Any]:
    from gpujob.jobfile.model import JobSpec

    models: dict[str, Any] = {}
    todo: list[type[BaseModel]] = [JobSpec]
    while todo:
        model = todo.pop()
        if model.__name__ not in models:
            models[model.__name__] = _model(model, todo)
    return {
        "format": FORMAT,
        "generated_by": "python -m gpujob.spec.fastgen",
        "sources": source_digests(),
        "root": JobSpec.__name__,
        "models": dict(sorted(models.items())),
    }


def render(data: dict[str, Any]) -> str:
    return json.dumps(data, indent=1, sort_keys=True, ensure_ascii=False) + "\n"


def stale() -> bool:
    return not TABLE.exists() or TABLE.read_text(encoding="utf-8") != render(table())


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if "--check" in args:
        if stale():
            sys.stderr.write(f"stale {TABLE.name}: run `make schemas` (python -m gpujob.spec.fastgen)\n")
            return 1
        return 0
    TABLE.write_text(render(table()), encoding="utf-8")
    sys.stdout.write(f"wrote {TABLE}\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
