"""JSON Schemas of gpujob's data, generated from the pydantic models (`make schemas`).

    python -m gpujob.schemas           write schemas/*.schema.json
    python -m gpujob.schemas --check   exit 1 when a committed schema is stale

Output is deterministic (sorted keys, two-space indent, trailing newline) so a stale file shows as a diff.
"""

from __future__ import annotations

import json
import sys
import typing
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel

DRAFT = "https://json-schema.org/draft/2020-12/schema"
Mode = Literal["validation", "serialization"]


def _job_schema() -> dict[str, Any]:
    from gpujob.jobfile.model import JobSpec

    schema = JobSpec.model_json_schema(mode="validation")
    _factory_defaults(schema, JobSpec)
    # gpu also takes a single alias (a before-validator wraps it in a list); say so, or editors flag it.
    gpu = schema["$defs"]["MachineSpec"]["properties"]["gpu"]
    description = gpu.pop("description", None)
    schema["$defs"]["MachineSpec"]["properties"]["gpu"] = {
        "anyOf": [{"type": "string"}, gpu],
        "description": description,
        "title": gpu.get("title", "Gpu"),
    }
    return schema


def _factory_defaults(schema: dict[str, Any], root: type[BaseModel]) -> None:
    """pydantic leaves out defaults made by default_factory; write them in so editors show every default."""
    seen: set[type[BaseModel]] = set()
    todo = [root]
    while todo:
        model = todo.pop()
        if model in seen:
            continue
        seen.add(model)
        node = schema if model is root else schema["$defs"].get(model.__name__, {})
        for name, field in model.model_fields.items():
            stack = [field.annotation]
            while stack:
                ann = stack.pop()
                if isinstance(ann, type) and issubclass(ann, BaseModel):
                    todo.append(ann)
                stack.extend(typing.get_args(ann))
            if field.default_factory is None or name not in node.get("properties", {}):
                continue
            value = field.default_factory()  # type: ignore[call-arg]
            node["properties"][name]["default"] = (
                value.model_dump(mode="json") if isinstance(value, BaseModel) else value
            )


def _model_schema(model: type[BaseModel], mode: Mode) -> dict[str, Any]:
    return model.model_json_schema(mode=mode)


def schemas() -> dict[str, dict[str, Any]]:
    """file name -> schema document."""
    from gpujob.plan.model import Plan
    from gpujob.profile import Profile

    docs = {
        "job.schema.json": ("gpujob job file (job.yaml)", _job_schema()),
        "plan.schema.json": (
            "gpujob saved plan (gpujob plan -o plan.json)",
            _model_schema(Plan, "serialization"),
        ),
        "profile.schema.json": (
            "gpujob platform profile (profiles/<platform>.yaml)",
            _model_schema(Profile, "validation"),
        ),
    }
    out = {}
    for name, (title, schema) in docs.items():
        schema["$schema"] = DRAFT
        schema["title"] = title
        out[name] = schema
    return out


def render(schema: dict[str, Any]) -> str:
    return json.dumps(schema, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def schemas_dir() -> Path:
    return Path(__file__).resolve().parent.parent / "schemas"


def stale(directory: Path | None = None) -> list[str]:
    """Names of schema files that are missing or differ from what the models generate now."""
    directory = directory or schemas_dir()
    out = []
    for name, schema in schemas().items():
        path = directory / name
        if not path.exists() or path.read_text(encoding="utf-8") != render(schema):
            out.append(name)
    return out


def write(directory: Path | None = None) -> list[Path]:
    directory = directory or schemas_dir()
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for name, schema in schemas().items():
        path = directory / name
        path.write_text(render(schema), encoding="utf-8")
        written.append(path)
    return written


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if "--check" in args:
        names = stale()
        if names:
            sys.stderr.write(f"stale schemas: {', '.join(names)}; run `make schemas`\n")
            return 1
        return 0
    for path in write():
        sys.stdout.write(f"wrote {path}\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
