"""A job file changed in place, in the simulator (#41): job `llm`, applied, becomes sweep `llm`. Its pod
still runs; `plan` and `destroy` show it with its $/h and a gated end (nothing of it is touched
unapproved), `audit` calls it this checkout's and says what ends it, and the approved destroy ends it
through the gate."""

from __future__ import annotations

import pytest

from gpujob.sim.testing import Sim
from tests.e2e.sweep_support import gj, pods, sweep_project
from tests.e2e.test_sweep import JOB as SWEEP

pytestmark = [pytest.mark.sim, pytest.mark.ssh]

ONE = SWEEP.split("sweep:")[0].replace("name: abl", "name: llm").replace("  spot: true\n", "")
ONE = ONE.replace("  command: python3 cell.py\n", "  command: sleep 600\n")


def test_a_job_turned_into_a_sweep_keeps_its_running_pod_in_plan_destroy_and_audit(
    sim: Sim, tmp_path
) -> None:  # type: ignore[no-untyped-def]
    d, env = sweep_project(sim, tmp_path, ONE, name="llm")
    first = gj(d, env, "apply", "--auto-approve")
    assert first.returncode == 0, first.stdout + first.stderr
    (old,) = [p for p in pods(sim) if p["status"] == "RUNNING"]
    (d / "job.yaml").write_text(SWEEP.replace("name: abl", "name: llm"))

    plan = gj(d, env, "plan").stdout
    assert "── llm · runpod · job.yaml · wants absent" in plan, plan
    assert "[unnamed] job.yaml turned job 'llm' into a sweep, but what it made still bills $0." in plan
    assert f"pod {old['name']} ({old['id']}, running)" in plan
    assert "- terminate pod " + old["name"] + " [gated]  (llm.pod.terminate" in plan, plan

    refused = gj(d, env, "destroy", "--auto-approve")
    said = refused.stdout + refused.stderr
    assert refused.returncode != 0 and "--approve llm.pod.terminate" in said, said
    assert [p["id"] for p in pods(sim) if p["status"] == "RUNNING"] == [old["id"]]  # nothing touched

    audit = gj(d, env, "audit").stdout
    assert "this repo (llm)" in audit and "other gpujob" not in audit, audit
    assert "checkout (project) holding" not in audit, audit

    done = gj(d, env, "destroy", "--auto-approve", "--approve", "llm.pod.terminate")
    assert done.returncode == 0, done.stdout + done.stderr
    assert not [p for p in pods(sim) if p["id"] == old["id"] and p["status"] != "TERMINATED"], pods(sim)
    again = gj(d, env, "plan").stdout
    assert "wants absent" not in again and "[unnamed]" not in again, again
