"""`sweep:` with `fallback:` (docs/sweeps.md, "With fallback:"): refused by `gpujob validate` at the
fallback key's file:line, saying why (a queue's never-run-again records and its in-flight checkpoints
stay on its machine's disk, which a move does not carry) and what to do, with or without
PYTHONOPTIMIZE (no assert guards it)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.sweep.test_sweep_unit import JOB

FALLBACK = """fallback:
  - platform: paperspace
    machine: {gpu: [A4000], regions: [ny2], template: ubuntu-22.04}
    storage: {volume_gb: 50, mount: /workspace}
"""


@pytest.mark.parametrize("optimize", ["", "1"])
def test_validate_refuses_a_sweep_with_fallback_at_its_key_saying_why_and_what_to_do(
    tmp_path: Path, optimize: str
) -> None:
    text = JOB.replace("spot: true, ", "") + FALLBACK
    (tmp_path / "job.yaml").write_text(text)
    line = text.splitlines().index("fallback:") + 1
    env = {**os.environ, "PYTHONOPTIMIZE": optimize} if optimize else dict(os.environ)
    env.pop("PYTHONOPTIMIZE", None) if not optimize else None
    out = subprocess.run([sys.executable, "-m", "gpujob", "validate", "job.yaml"], cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=60)  # fmt: skip
    said = " ".join((out.stdout + out.stderr).split())
    assert out.returncode != 0, said
    assert f"job.yaml:{line}:" in said, said
    assert "fallback: a sweep's queues cannot move to another platform" in said, said
    assert "a moved queue would run its finished cells again" in said, said
    assert "Drop fallback: (the queues run on runpod only), or write the sweep a second job file" in said, (
        said
    )
