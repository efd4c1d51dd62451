"""One run per job, from the live state (issue #37), in the simulator: the job runs on Paperspace after
a move, and its failover record is set back to RunPod (what a state restored from a backup taken before
the move holds). The plan is an error naming the running Paperspace machine and its $/h, never a month
of kept storage; apply starts nothing; `gpujob apply --adopt paperspace` sets the record to the live
truth, and the next plan is clean."""

from __future__ import annotations

import json
import re
from pathlib import Path

from gpujob.sim.testing import Sim
from tests.e2e import failover_support as fo
from tests.e2e.failover_support import JOB


def test_a_job_running_on_paperspace_with_its_record_set_back_to_runpod_starts_no_second_run(
    sim: Sim, tmp_path: Path
) -> None:
    p = fo.moved_by_apply(sim, tmp_path, "onerun")
    sim.inject("clear")  # RunPod can serve again: the record's platform would start the stopped pod there
    (machine,) = [
        m for m in fo.mine(p, "machines") if m.get("state", m.get("status")) in ("ready", "running")
    ]
    record = fo.where(p)
    restored = {**record, "platform": "runpod", "entry": -1, "moves": []}
    p.store().write(f"failover/{JOB}.json", json.dumps(restored).encode())
    pods = fo.ids(fo.mine(p, "pods"))

    plan = p.gj("plan", check=False)
    out = plan.stdout
    assert plan.returncode == 1, out + plan.stderr
    (line,) = [ln for ln in out.splitlines() if "[two-runs]" in ln]
    assert "✗ error" in line and machine["name"] in line and machine["id"] in line, line
    assert re.search(r"billing \$\d+\.\d\d/h", line), line
    assert "`gpujob apply --adopt paperspace`" in " ".join(out.split()), out
    # the running GPU is named with its hourly rate, never as a monthly storage figure
    assert not re.search(rf"{machine['name']}[^;]*running, \$[\d.]+/month", out), out

    applied = p.gj("apply", "--auto-approve", check=False, timeout=120)
    said = applied.stdout + applied.stderr
    assert applied.returncode != 0 and "[two-runs]" in said, said
    # the refusal names its findings, printed above it
    assert said.index("[two-runs]") < said.index("nothing was applied"), said
    assert fo.ids(fo.mine(p, "pods")) == pods  # nothing started on RunPod

    adopted = p.gj("apply", "--adopt", "paperspace")
    assert "adopted" in adopted.stdout and machine["name"] in adopted.stdout, adopted.stdout
    after = fo.where(p)
    assert after["platform"] == "paperspace" and after["entry"] == 0, after
    assert after["moves"][-1]["outcome"] == "adopted", after
    clean = p.gj("plan", check=False)
    assert clean.returncode in (0, 2) and "✗ error" not in clean.stdout, clean.stdout
    assert "[two-runs]" not in clean.stdout
    assert fo.ids(fo.mine(p, "pods")) == pods
