"""failback: auto whose home refuses the start, in the simulator: the RunPod spot job moved to Paperspace
by `gpujob watch`; RunPod's catalog has stock again but refuses every spot resume (a bid under the
floor), so the move back fails. Watch says failback-refused, nothing of the job bills by the hour on
RunPod, and the job runs on where it is: its Paperspace machine is started again and the run resumes
there (the next failback waits, as the plan says)."""

from __future__ import annotations

from pathlib import Path

from gpujob.sim.testing import Sim
from tests.e2e import failover_support as fo
from tests.e2e.e2e_support import poll


def test_a_failback_home_refuses_leaves_the_job_running_where_it_is(sim: Sim, tmp_path: Path) -> None:
    p = fo.applied(sim, tmp_path, "anywhere-back-refused", "auto", extra="failback: auto\n")
    watching = p.popen("watch", "--interval", "1s", "--probe", "0.2s", "--max-recoveries-per-hour", "50",
                       extra_env={"GPUJOB_FAILOVER_CREATE_WAIT": "8"})  # fmt: skip
    try:
        fo.poll_verified_by_watch(p)
        fo.preempt(sim, p)  # every GPU out, the pod preempted: watch moves the job to Paperspace
        poll("the move to Paperspace", lambda: fo.moves(p), deadline_s=180)
        sim.inject("clear")  # RunPod's catalog has stock again...
        sim.inject("bid_too_low", platform="runpod", count=1000)  # ...but refuses every spot rent and resume
        refused = fo.poll_event(p, "failback refused", "failback-refused", deadline_s=240)
        restarted = poll(
            "the job running on Paperspace again",
            lambda: [m for m in fo.mine(p, "machines") if m["state"] == "ready"],
            deadline_s=180,
        )
        resumed = poll(
            "the run to resume on Paperspace a second time",
            lambda: len(p.gj("logs", "-n", "400", check=False).stdout.split("resumed from step")) > 2 or None,
            deadline_s=120,
        )
        plan = p.gj("plan", check=False).stdout
    finally:
        out = fo.stop(watching)
    assert "runpod refused the start" in refused["happened"] and "failback 1 of 3" in refused["happened"], (
        refused
    )
    assert "the job runs on paperspace (fallback[0])" in refused["did"], refused
    record = fo.where(p)
    assert record["platform"] == "paperspace" and record["moves"][-1]["outcome"].startswith("failed"), record
    assert restarted and resumed, out
    # Nothing of the job bills by the hour on RunPod: its pod stays stopped (its volume is kept).
    assert all(o.get("status") != "RUNNING" for o in fo.mine(p, "pods")), fo.mine(p, "pods")
    # The next failback waits, and the plan says when (no move home planned meanwhile).
    assert "no move home: failback waits: runpod refused the start 1 time(s)" in " ".join(plan.split()), plan
    assert f"{fo.JOB}.move" not in plan, plan
