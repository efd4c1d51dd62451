"""Helpers for the spec tests: write job files into tmp_path and load them."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

RUNPOD_JOB = """\
version: 1
name: bert
platform: runpod
machine:
  gpu: [A100-80GB, H100-80GB]
  regions: [EU-RO-1]
  image: runpod/pytorch:2.4.0-py3.11-cuda12.4.1-devel-ubuntu22.04
storage:
  volume_gb: 100
checkpoint:
  dir: /workspace/ckpt
  interval: 15m
run:
  command: python train.py
"""

PAPERSPACE_JOB = """\
version: 1
name: resnet
platform: paperspace
machine:
  gpu: A4000
  regions: [ny2]
  template: ml-in-a-box
  auto_shutdown: 72h
storage:
  volume_gb: 250
"""


@pytest.fixture
def write(tmp_path: Path) -> Callable[..., Path]:
    def _write(text: str | bytes, name: str = "job.yaml") -> Path:
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(text, bytes):
            path.write_bytes(text)
        else:
            path.write_text(text, encoding="utf-8")
        return path

    return _write


@pytest.fixture
def runpod_job() -> str:
    return RUNPOD_JOB


@pytest.fixture
def paperspace_job() -> str:
    return PAPERSPACE_JOB


@pytest.fixture
def repo() -> Path:
    return REPO
