"""A Paperspace Core machine through the same lifecycle: the whole disk goes with destroy, so the
gate needs a verified pull from this machine; a static IP outlives the machine and is released."""

from __future__ import annotations

import json
import re

from tests.e2e.e2e_support import Project, poll

JOB = """version: 1
name: pscore
platform: paperspace
machine:
  gpu: [A4000, A5000]
  regions: [ny2]
  template: ubuntu-22.04
  public_ip: static
storage:
  volume_gb: 50
  mount: /workspace
checkpoint:
  dir: /workspace/ckpt
  interval: 1s
  keep: 2
  pull_to: ./checkpoints
  verify: python3 verify_ckpt.py {file}
run:
  sync: {src: ., dest: /workspace/code, exclude: [checkpoints, .gpujob]}
  command: python3 train.py
  env: {TOTAL_STEPS: "5000", STEP_SECONDS: "0.05"}
"""


def test_paperspace_machine_with_static_ip_destroyed_through_the_gate(project: Project) -> None:
    p = project
    (p.dir / "job.yaml").write_text(JOB)
    p.gj("validate", "job.yaml")
    p.gj("apply", "--auto-approve")

    def step() -> int:
        run = p.status().get("run") or {}
        m = re.search(r"step_(\d+)", run.get("last_checkpoint") or "")
        return int(m.group(1)) if m else 0

    poll("a checkpoint on the machine", lambda: step() > 0)
    plan = p.gj("destroy", "--auto-approve", check=False)
    assert plan.returncode == 1
    ids = sorted(set(re.findall(r"--approve ([^\s`]+)", plan.stderr)))
    assert "pscore.machine.terminate" in ids and any(i.endswith("release-ip") for i in ids), plan.stderr
    assert json.loads(p.gj("status", "--format", "json").stdout)[0]["machine"] is not None

    args = [a for i in ids for a in ("--approve", i)]
    done = p.gj("destroy", "--auto-approve", *args)
    assert "0 failed" in done.stderr and "pulled and verified" in done.stderr
    record = p.record("pulls/pscore.json")
    assert record["tier"] == "block_storage" and record["files"]
    bill = p.sim.bill()
    assert all(i["rate_per_hour"] == 0 for i in bill["items"]), [
        i for i in bill["items"] if i["rate_per_hour"]
    ]
