"""The PR step end to end against the simulator: `gpujob plan --format markdown` -> `gpujob pr-comment body`."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
JOB = ROOT / "tests" / "audit" / "jobs" / "bert.yaml"

pytestmark = pytest.mark.sim


def test_plan_markdown_becomes_the_comment(tmp_path: Path) -> None:
    from gpujob.sim.testing import running_simulator

    (tmp_path / "jobs").mkdir()
    shutil.copy(JOB, tmp_path / "jobs" / "bert.yaml")
    with running_simulator(tmp_path / "sim") as sim:
        env = {**os.environ, **sim.env, "CI": "true", "GPUJOB_STATE_DIR": str(tmp_path / ".gpujob")}
        plan = subprocess.run(
            [sys.executable, "-m", "gpujob", "plan", "--format", "markdown", "-o", "plan.json"],
            cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
    # 1 = blocked by an error finding (this job keeps checkpoints on the pod's disk): the comment must
    # still be posted so the reviewer sees why.
    assert plan.returncode in (0, 1, 2) and plan.stdout.strip(), plan.stderr
    (tmp_path / "plan.md").write_text(plan.stdout)
    assert (tmp_path / "plan.json").exists()
    body = subprocess.run(
        [sys.executable, "-m", "gpujob", "pr-comment", "body", "--plan", "plan.md", "--exit-code", str(plan.returncode)],
        cwd=tmp_path, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert body.returncode == 0, body.stderr
    assert body.stdout.startswith("<!-- gpujob-plan -->\n## gpujob plan\n")
    assert [ln for ln in body.stdout.splitlines() if ln.startswith("#")] == ["## gpujob plan"]
    assert "bert" in body.stdout and len(body.stdout) <= 65536
    assert plan.stdout.strip().splitlines()[2] in body.stdout  # the summary line
    assert "RUNPOD_API_KEY" not in body.stdout and sim.env["RUNPOD_API_KEY"] not in body.stdout
