"""What the tests run against the fake APIs share: the two job files it serves, and `gpujob` run as a
user runs it (a subprocess, with the caller's environment cleaned of gpujob's own variables and keys
so only the fake's URLs and keys reach it)."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping
from pathlib import Path

from tests.cli_process import run_gpujob as run_cli

RUNPOD_JOB = """version: 1
name: rpfake
platform: runpod
state: {state}
machine:
  gpu: RTX4090
  regions: [US-KS-2]
  image: runpod/pytorch:1.0.2-cu1281-torch280-ubuntu2404
  container_disk_gb: 50
storage:
  volume_gb: 20
{extra}"""
PAPERSPACE_JOB = """version: 1
name: psfake
platform: paperspace
state: {state}
machine:
  gpu: A4000
  regions: [ny2]
  template: ML-in-a-Box
  auto_shutdown: 12h
storage:
  volume_gb: 50
{extra}"""


def job_text(platform: str, state: str, extra: str = "") -> str:
    return (RUNPOD_JOB if platform == "runpod" else PAPERSPACE_JOB).format(state=state, extra=extra)


def run_gpujob(
    env: Mapping[str, str], *args: str, cwd: Path | None = None, timeout: float = 240
) -> subprocess.CompletedProcess[str]:
    clean = {
        k: v for k, v in os.environ.items() if not k.startswith("GPUJOB_") and not k.endswith("_API_KEY")
    }
    # The fake moves a machine on one state per read, so the pause between reads is the test's to set:
    # the default (3 s) made each apply here wait seconds for nothing.
    clean.update({"GPUJOB_POLL_INTERVAL": "0.05", **env}, NO_COLOR="1")
    return run_cli(args, cwd=cwd or Path.cwd(), env=clean, timeout=timeout)
