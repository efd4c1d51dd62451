"""Fixtures for the real-API fidelity tests: the providers' respx router and fake clock, the independent
fake of the real APIs, and a job file writer that goes through the real loader."""

from __future__ import annotations

import dataclasses
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

from gpujob.spec.load import LoadedSpec, load_specs
from tests.owners import PROJECT
from tests.providers.conftest import anyio_backend, clock, router, simb, simg  # noqa: F401  (fixtures)


@pytest.fixture
def write_job(tmp_path: Path) -> Callable[[str], LoadedSpec]:
    def write(text: str) -> LoadedSpec:
        path = tmp_path / "job.yaml"
        path.write_text(textwrap.dedent(text).lstrip())
        return dataclasses.replace(load_specs([path])[0], project=PROJECT)

    return write
