"""Turn pydantic's validation errors into SpecProblems a user can act on: a clean key path, a position,
a plain message and a hint (did-you-mean for typos, the accepted forms for durations and sizes)."""

from __future__ import annotations

import re
import types
import typing
from typing import Any

from pydantic import BaseModel, ValidationError

from gpujob.spec.positions import Positions, child_path
from gpujob.spec.problem import SpecProblem, printable
from gpujob.spec.problem import did_you_mean as did_you_mean
from gpujob.spec.problem import suggestion as suggestion

DURATION_HINT = "write a number with a unit: 30s, 15m, 48h, 2d or 1w"
SIZE_HINT = "write a whole number of GB without a unit, e.g. 100"
# Values under these paths may be secrets pasted by mistake: never echo them.
SENSITIVE = ("run.env", "run.secrets")
MODEL_HINTS = {
    "checkpoint.interval": "set checkpoint.mtbf and checkpoint.write_time, or a fixed interval such as 15m",
}
PATH_PREFIX = re.compile(r"^([a-z_]+(?:\.[a-z_]+)+(?:\.[A-Za-z_][A-Za-z0-9_]*)?): (.+)$")  # sweep.matrix.LR
_TOP_PREFIX = re.compile(r"^([a-z_]+): (.+)$")  # fallback: ... (only a top-level key of the model)
# A field validator of a mapping names the entry it refuses as "[KEY] ...": placed at that key.
_CHILD_PREFIX = re.compile(r"^\[([A-Za-z_][A-Za-z0-9_]*)\] (.+)$")


def _members(annotation: Any) -> list[Any]:
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return _members(typing.get_args(annotation)[0])
    if origin in (typing.Union, types.UnionType):
        return [m for a in typing.get_args(annotation) if a is not type(None) for m in _members(a)]
    return [annotation]


def _walk(root: type[BaseModel], loc: tuple[Any, ...]) -> tuple[str, type[BaseModel] | None, Any]:
    """(clean key path, the model holding the last key, the last field's annotation).

    Union branches add a tag to pydantic's loc ("function-before[...]", "literal['auto']"); drop them."""
    path: str = ""
    current: Any = root
    owner: type[BaseModel] | None = None
    annotation: Any = None
    for part in loc:
        members = _members(current) if current is not None else []
        model = next((m for m in members if isinstance(m, type) and issubclass(m, BaseModel)), None)
        if model is not None and isinstance(part, str):
            owner = model
            field = model.model_fields.get(part)
            annotation = field.annotation if field else None
            current, path = annotation, child_path(path, part)
            continue
        seq = next((m for m in members if typing.get_origin(m) in (list, dict)), None)
        if seq is not None and isinstance(part, int | str) and not (isinstance(part, str) and "[" in part):
            args = typing.get_args(seq)
            current = args[-1] if args else None
            path = child_path(path, part)
            continue
        if isinstance(part, int):
            path, current = child_path(path, part), None
        # anything else is a union-branch tag
    return path, owner, annotation


def show(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, str):
        text = value if len(value) <= 40 else value[:37] + "..."
        return f"'{printable(text)}'"
    return str(value)


def _message(err: dict[str, Any], path: str, owner: type[BaseModel] | None) -> tuple[str, str | None]:
    kind, ctx, value = err["type"], err.get("ctx") or {}, err.get("input")
    last = path.rpartition(".")[2]
    got = "" if path.startswith(SENSITIVE) else f", got {show(value)}"
    if kind == "missing":
        field = owner.model_fields.get(last) if owner else None
        described = (field.description or "").rstrip(".") if field else ""
        return f"missing required key '{last}'", described or None
    if kind == "extra_forbidden":
        choices = list(owner.model_fields) if owner else []
        return f"unknown key '{last}'", suggestion(last, choices, what="valid keys here") if choices else None
    if kind in ("int_type", "int_parsing", "int_from_float"):
        if last.endswith("_gb"):
            return f"expected a size in whole GB{got}", SIZE_HINT
        return f"expected a whole number{got}", None
    if kind in ("float_type", "float_parsing"):
        return f"expected a number{got}", None
    if kind in ("bool_type", "bool_parsing"):
        if last == "spot":  # bool | "prefer": pydantic reports the bool branch first
            return f"expected true, false or prefer{got}", None
        return f"expected true or false{got}", None
    if kind == "string_type":
        return f"expected text{got}", "quote it if YAML reads it as something else"
    if kind == "list_type":
        return f"expected a list{got}", "write [a, b] or one '- item' per line"
    if kind in ("dict_type", "model_type", "model_attributes_type"):
        return f"expected a mapping of keys{got}", None
    if kind == "literal_error":
        options = re.findall(r"'([^']*)'", str(ctx.get("expected", ""))) or [str(ctx.get("expected", ""))]
        if len(options) == 1 and not isinstance(value, str):
            return f"must be {options[0]}{got}", None
        shown = show(value) if not path.startswith(SENSITIVE) else "value"
        guess = did_you_mean(str(value), options)
        return f"{shown} is not one of: {', '.join(options)}", f"did you mean '{guess}'?" if guess else None
    bounds = {
        "greater_than_equal": "at least",
        "greater_than": "more than",
        "less_than_equal": "at most",
        "less_than": "less than",
    }
    if kind in bounds:
        limit = next(iter(ctx.values()), "?")
        return f"must be {bounds[kind]} {limit}{got}", None
    if kind == "string_pattern_mismatch":
        pattern = str(ctx.get("pattern", ""))
        if pattern == "^/":
            return f"must be an absolute path starting with /{got}", None
        if last == "name":
            return (
                f"not a valid name{got}",
                "lower-case letters and digits, starting with a letter, words joined by single '-' "
                "(no '--', no '-' at the end), at most 39 characters",
            )
        return f"does not match the pattern {pattern}{got}", None
    if kind in ("too_short", "string_too_short"):
        return "must not be empty", None
    if kind in ("too_long", "string_too_long"):
        return f"too long (at most {ctx.get('max_length')})", None
    if kind == "value_error":
        text = str(ctx.get("error", err.get("msg", "")))
        if "duration" in text and not any(
            w in text for w in ("too long", "too short", "longer than zero", "must be positive")
        ):
            if isinstance(value, int | float) and not isinstance(value, bool):
                return f"{show(value)} is not a duration (no unit)", DURATION_HINT
            return f"{show(value)} is not a duration", DURATION_HINT
        return text, None
    return str(err.get("msg", "invalid value")), None


def _sensitive_items(path: str, data: Any, positions: Positions, display: str) -> list[SpecProblem]:
    """run.env / run.secrets name errors: one problem per bad name, without echoing the value."""
    from gpujob.jobfile.rules import ENV_NAME_PATTERN, env_value_problem, secret_name_problem

    section = (data.get("run") or {}) if isinstance(data, dict) else {}
    found: list[SpecProblem] = []
    if path == "run.secrets":
        for i, item in enumerate(section.get("secrets") or []):
            refusal = secret_name_problem(str(item))
            if refusal is not None:
                line, col = positions.value(f"run.secrets[{i}]")
                found.append(SpecProblem(display, line, col, f"run.secrets[{i}]", *refusal))
    else:
        env = section.get("env")
        for key, value in (env if isinstance(env, dict) else {}).items():
            if not re.match(ENV_NAME_PATTERN, str(key)):
                line, col = positions.key(f"run.env.{key}")
                found.append(
                    SpecProblem(
                        display,
                        line,
                        col,
                        "run.env",
                        "key is not a valid environment variable name",
                        "use letters, digits and _, not starting with a digit",
                    )
                )
                continue
            problem = env_value_problem(str(key), value) if isinstance(value, str) else None
            if problem:
                hint = None
                if "secret" in problem:
                    hint = f"list {key} under run.secrets and export it in the shell that runs gpujob"
                line, col = positions.value(f"run.env.{key}")
                found.append(SpecProblem(display, line, col, f"run.env.{key}", problem, hint))
    if not found:  # never lose a refusal: the file must not pass as valid (nor its value be echoed)
        line, col = positions.key(path)
        found.append(SpecProblem(display, line, col, path, "invalid value"))
    return found


def split_key(message: str, top_keys: Any) -> tuple[str, str]:
    """('key.path', the rest) of a model-level message 'key.path: ...' (a single top-level key only when
    it is one of `top_keys`, the model's fields: `fallback: ...`), else ('', message)."""
    match = PATH_PREFIX.match(message) or _TOP_PREFIX.match(message)
    if match and (match.re is PATH_PREFIX or match.group(1) in top_keys):
        return match.group(1), match.group(2)
    return "", message


def validation_problems(
    exc: ValidationError, root: type[BaseModel], data: Any, positions: Positions, display: str
) -> list[SpecProblem]:
    by_path: dict[str, list[tuple[dict[str, Any], type[BaseModel] | None]]] = {}
    for detail in exc.errors():
        path, owner, _ = _walk(root, tuple(detail["loc"]))
        by_path.setdefault(path, []).append((dict(detail), owner))
    problems: list[SpecProblem] = []
    for path, errs in by_path.items():
        if path in SENSITIVE and any(e["type"] == "value_error" for e, _ in errs):
            problems += _sensitive_items(path, data, positions, display)
            continue
        # One problem per key: for a union (interval: duration | auto) keep the most specific branch.
        errs.sort(key=lambda pair: pair[0]["type"] != "value_error")
        err, owner = errs[0]
        message, hint = _message(err, path, owner)
        alternatives = [
            re.findall(r"'([^']*)'", str((e.get("ctx") or {}).get("expected", "")))
            for e, _ in errs[1:]
            if e["type"] == "literal_error"
        ]
        extra = [a for group in alternatives for a in group]
        if extra and hint:
            hint = f"{hint}; or {', '.join(extra)}"
        key_path = path
        if not path and err["type"] == "value_error":
            key_path, message = split_key(message, root.model_fields)
            if key_path:
                hint = MODEL_HINTS.get(key_path)
        child = _CHILD_PREFIX.match(message) if path and err["type"] == "value_error" else None
        if child:
            key_path, message = f"{path}.{child.group(1)}", child.group(2)
        at_key = err["type"] in ("missing", "extra_forbidden") or (not path and key_path) or bool(child)
        line, col = positions.key(key_path) if at_key else positions.value(key_path)
        problems.append(SpecProblem(display, line, col, key_path, message, hint))
    return problems
