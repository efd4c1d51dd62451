"""The committed JSON schemas match the models, and every JobSpec field is documented."""

from __future__ import annotations

import json
import typing
from pathlib import Path

from pydantic import BaseModel

from gpujob.jobfile.model import JobSpec
from gpujob.schemas import DRAFT, render, schemas, stale, write

REPO = Path(__file__).resolve().parents[1]


def test_committed_schemas_are_current() -> None:
    names = stale(REPO / "schemas")
    assert not names, f"stale schemas {names}: run `make schemas` (python -m gpujob.schemas) and commit them"


def _models(model: type[BaseModel], seen: set[type[BaseModel]]) -> set[type[BaseModel]]:
    if model in seen:
        return seen
    seen.add(model)
    for field in model.model_fields.values():
        stack = [field.annotation]
        while stack:
            ann = stack.pop()
            if isinstance(ann, type) and issubclass(ann, BaseModel):
                _models(ann, seen)
            stack.extend(typing.get_args(ann))
    return seen


def test_every_jobspec_field_has_a_description() -> None:
    models = _models(JobSpec, set())
    assert len(models) >= 8
    missing = [
        f"{m.__name__}.{n}"
        for m in models
        for n, f in m.model_fields.items()
        if not (f.description or "").strip()
    ]
    assert not missing, f"fields without a description (add one in gpujob/jobfile/model.py): {missing}"


def test_job_schema_shape() -> None:
    doc = schemas()["job.schema.json"]
    assert doc["$schema"] == DRAFT and doc["title"].startswith("gpujob job file")
    assert set(doc["required"]) == {"version", "name", "platform", "machine"}
    props = doc["$defs"]["MachineSpec"]["properties"]
    assert {"type": "string"} in props["gpu"]["anyOf"]  # a single alias is allowed
    assert doc["$defs"]["CheckpointSpec"]["properties"]["interval"]["default"] == "auto"
    # defaults made by default_factory are documented too
    assert doc["properties"]["teardown"]["default"] == {"on_finish": "keep", "on_failure": "keep"}
    assert doc["$defs"]["RunSpec"]["properties"]["sync"]["default"]["dest"] == "/workspace/code"
    assert props["regions"]["default"] == []


def test_output_is_deterministic(tmp_path: Path) -> None:
    write(tmp_path)
    first = {p.name: p.read_text() for p in tmp_path.iterdir()}
    assert set(first) == {"job.schema.json", "plan.schema.json", "profile.schema.json"}
    for text in first.values():
        assert text.endswith("}\n") and text == render(json.loads(text))
    write(tmp_path)
    assert first == {p.name: p.read_text() for p in tmp_path.iterdir()}
    assert stale(tmp_path) == []
    (tmp_path / "job.schema.json").write_text("{}\n")
    assert stale(tmp_path) == ["job.schema.json"]


def test_examples_match_the_json_schema() -> None:
    import jsonschema  # a test dependency: the examples must validate against the published schema
    from ruamel.yaml import YAML

    schema = json.loads((REPO / "schemas" / "job.schema.json").read_text())
    validator = jsonschema.Draft202012Validator(schema)
    for example in ("runpod-spot-netvol", "runpod-ondemand", "paperspace-core"):
        data = YAML(typ="safe").load((REPO / "examples" / example / "job.yaml").read_text())
        errors = [e.message for e in validator.iter_errors(data)]
        assert errors == [], (example, errors)
    broken = YAML(typ="safe").load((REPO / "examples" / "broken" / "several-problems.yaml").read_text())
    assert list(validator.iter_errors(broken))
