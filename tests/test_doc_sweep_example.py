"""docs/sweeps.md's first example, planned against the simulator as a reader would copy it, draws no
warning about its own teardown line (it used to draw RP4 on every queue); docs/failover.md says what
the tool does with a sweep that has fallback: (#41, #37: it moves queue by queue)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

from gpujob.sim.testing import running_simulator

ROOT = Path(__file__).resolve().parents[1]
BASE = """\
version: 1
name: abl
platform: runpod
machine:
  gpu: [RTX4090]
  regions: [EU-RO-1]
  image: runpod/pytorch:2.4.0-py3.11-cuda12.4.1-devel-ubuntu22.04
storage:
  network_volume: {name: data, size_gb: 20}
checkpoint:
  dir: /workspace/ckpt
  interval: 15m
run:
  command: python train.py
"""


def first_yaml(page: str) -> str:
    block = re.search(r"```yaml\n(.*?)```", (ROOT / "docs" / page).read_text(), re.S)
    assert block
    return block.group(1)


def test_the_sweep_examples_teardown_draws_no_warning_on_its_queues(tmp_path: Path) -> None:
    (tmp_path / "job.yaml").write_text(BASE + first_yaml("sweeps.md"))
    (tmp_path / "train.py").write_text("print('ok')\n")
    with running_simulator(tmp_path / "sim", pods=False) as sim:
        out = subprocess.run(
            [sys.executable, "-m", "gpujob", "plan", "job.yaml", "--format", "json"],
            cwd=tmp_path, env={**__import__("os").environ, **sim.env}, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
    assert out.returncode == 0, out.stderr
    jobs = json.loads(out.stdout)["jobs"]
    assert len(jobs) == 2  # machines: 2
    launch = next(a for a in jobs[0]["actions"] if a["id"] == "abl.q1.run.launch")
    cells = [r for r in launch["reasons"] if r.startswith("cell ")]  # what runs, cell by cell (#41)
    assert len(cells) == 3 and all("`python train.py`; resumes from the latest checkpoint in /workspace/ckpt/"
                                   in r for r in cells), launch["reasons"]  # fmt: skip
    assert not any(r.endswith("checkpoint in /workspace/ckpt") for r in launch["reasons"])
    rp4 = [(j["job"], f["source"]) for j in jobs for f in j["findings"] if f["code"] == "RP4"]
    assert rp4 == []  # a stopped queue machine's GPU may be rented away: the example does not stop it


def test_the_text_plan_leads_with_the_sweep_and_shows_each_finding_once(tmp_path: Path) -> None:
    (tmp_path / "job.yaml").write_text(BASE.replace("  regions: [EU-RO-1]\n", "") + first_yaml("sweeps.md"))
    with running_simulator(tmp_path / "sim", pods=False) as sim:
        out = subprocess.run(
            [sys.executable, "-m", "gpujob", "plan", "job.yaml"],
            cwd=tmp_path, env={**__import__("os").environ, **sim.env}, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert re.fullmatch(
        r"sweep abl: 6 cells on 2 machines, est\. \$\d+\.\d\d in all, \$\d+\.\d\d/h while its machines run",
        lines[2],
    )
    assert sum("[image-digest]" in line for line in lines) == 1  # printed by q1, not again by q2
    assert sum("[RP7] network volume without machine.regions" in line for line in lines) == 1
    assert any(re.fullmatch(r"    \d+ as for abl--q1 above \(the same findings\)", line) for line in lines)


def test_failover_md_says_a_sweep_with_fallback_moves_queue_by_queue() -> None:
    from gpujob.layout.checks import __file__ as checks

    page = (ROOT / "docs" / "failover.md").read_text()
    assert "not on main" not in page
    assert "a sweep's queues cannot move to another platform" not in Path(checks).read_text() + page
    assert "each queue `<job>--q<N>` moves on its own" in page
    assert "only checkpoint.pull: continuous brings home" in Path(checks).read_text()
