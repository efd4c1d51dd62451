"""Fixtures for planner tests: write a job file and load it with the real loader."""

from __future__ import annotations

import dataclasses
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

from gpujob.spec.load import LoadedSpec, load_specs
from tests.owners import PROJECT
from tests.plan.plan_helpers import RUNPOD_JOB


@pytest.fixture
def write_job(tmp_path: Path) -> Callable[..., LoadedSpec]:
    """write_job(yaml_text, name="job.yaml") -> LoadedSpec (through gpujob.spec.load)."""

    def write(text: str = RUNPOD_JOB, name: str = "job.yaml", **replace: str) -> LoadedSpec:
        body = textwrap.dedent(text).lstrip()
        for old, new in replace.items():
            body = body.replace(old.replace("__", " "), new)
        path = tmp_path / name
        path.write_text(body)
        return dataclasses.replace(load_specs([path])[0], project=PROJECT)

    return write
