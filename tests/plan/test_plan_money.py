"""The plan's money comes from the cost engine over the live facts: the GPU actually running (not the first
choice), the state it is in, and what each resource really bills; the audit prices the same objects alike."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from gpujob.audit.classify import classify
from gpujob.plan.planner import build_plan
from gpujob.profile import HOURS_PER_MONTH, load_profile
from tests.owners import PROJECT
from tests.plan.plan_helpers import NOW, RUNPOD_JOB, live, pod, volume

Write = Callable[..., object]
RP = load_profile("runpod")
RTX4090 = RP.gpu("RTX4090")
A100 = RP.gpu("A100-80GB")

FALLBACK_JOB = RUNPOD_JOB.replace("gpu: A100-80GB", "gpu: [A100-80GB, RTX4090]\n  spot: true").replace(
    "run:\n  command: python train.py",
    "run:\n  command: python train.py\n  max_runtime: 10h\nbudget:\n  max_total_usd: 5",
)


def test_a_running_fallback_gpu_is_what_the_plan_bills_and_budgets(write_job: Write) -> None:
    """The first choice is A100 (spot $1.19/h); the pod fell back to a spot RTX4090 ($0.34/h). The plan's
    running rate and budget check are the RTX4090's, as the API reports it."""
    assert RTX4090 is not None and RTX4090.price_hour_spot == 0.34
    live_pod = pod(
        gpu_id=RTX4090.platform_id, spot=True, cost_per_hour=0.34, network_volume_id="nv-gpujob-job-ckpts"
    )
    loaded = write_job(FALLBACK_JOB)
    plan = build_plan([loaded], live(live_pod, volume()), now=NOW, env={})
    job = plan.jobs[0]
    assert [a.kind.value for a in job.actions] == ["no-op"]
    disks = (20 * 0.10 + 100 * 0.07) / HOURS_PER_MONTH
    assert job.running_usd_per_hour == pytest.approx(0.34 + disks, abs=1e-6)
    assert job.current_usd_per_hour == job.running_usd_per_hour == job.after_usd_per_hour
    # 10 h × $0.35/h stays under the $5 budget: no budget finding (the A100 would have projected $11.9)
    assert not [f for f in job.findings if f.code == "budget"]
    # the audit of the same live state bills the same per hour
    report = classify(
        live(live_pod, volume()),
        local_jobs={"job": PROJECT},
        now=NOW,
        idle_threshold_s=3600,
        profiles=load_profile,
    )
    assert sum(i.usd_per_hour for i in report.items) == pytest.approx(job.current_usd_per_hour, abs=1e-5)


def test_a_stopped_pod_bills_its_volume_disk_at_the_stopped_rate_everywhere(write_job: Write) -> None:
    """RunPod's API says cost 0 for an EXITED pod; its volume disk still bills at 2× (RP4)."""
    text = RUNPOD_JOB.replace(
        "storage:\n  network_volume: {name: ckpts, size_gb: 100}", "storage:\n  volume_gb: 50"
    )
    text = text.replace("dir: /workspace/ckpt", "dir: /workspace/ckpt").replace(
        "state: running", "state: stopped"
    )
    stopped = pod(status="stopped", raw_status="EXITED", volume_gb=50, cost_per_hour=0.0)
    plan = build_plan([write_job(text)], live(stopped), now=NOW, env={})
    job = plan.jobs[0]
    assert job.current_usd_per_hour == pytest.approx(50 * 0.20 / HOURS_PER_MONTH, abs=1e-9)
    report = classify(
        live(stopped), local_jobs={"job": PROJECT}, now=NOW, idle_threshold_s=3600, profiles=load_profile
    )
    (item,) = report.items
    assert item.usd_per_hour == pytest.approx(job.current_usd_per_hour, abs=1e-6)
    assert item.gotcha == "RP4" and item.idle


PS_JOB = """
version: 1
name: job
platform: paperspace
state: running
machine:
  gpu: A4000
  regions: [ny2]
  template: ubuntu-22.04
  public_ip: none
storage:
  volume_gb: 50
run:
  command: python train.py
  max_runtime: {runtime}
budget:
  max_total_usd: {budget}
"""


@pytest.mark.parametrize(
    ("runtime", "budget", "over"),
    [("90m", 1.20, True), ("90m", 1.60, False), ("2h", 1.60, False)],
)
def test_the_budget_projection_bills_paperspace_by_the_started_hour(
    write_job: Write, runtime: str, budget: float, over: bool
) -> None:
    """Paperspace bills every started hour in full (compute_billing_granularity: hour): 90 minutes of an
    A4000 ($0.76/h) with its 50 GB disk is billed as 2 h, $1.53, not 1.5 h ($1.15)."""
    plan = build_plan([write_job(PS_JOB.format(runtime=runtime, budget=budget))], live(), now=NOW, env={})
    found = [f for f in plan.jobs[0].findings if f.code == "budget" and f.severity == "warning"]
    assert bool(found) is over, [f.summary for f in plan.jobs[0].findings]
    if over:
        assert "projects $1.53" in found[0].summary


def test_projected_charge_follows_each_meters_granularity() -> None:
    from gpujob.cost.rates import Footprint, GpuRate, meters
    from gpujob.cost.spend import projected_charge

    ps = load_profile("paperspace")
    lines = meters(Footprint(machine="running", gpu=GpuRate("GPU 1× A4000", 0.76, "test"), volume_gb=50), ps)
    hourly = sum(m.usd_per_hour for m in lines.values())
    assert projected_charge(lines, 5400, ps) == pytest.approx(2 * hourly)  # 1.5 h -> 2 started hours
    assert projected_charge(lines, 7200, ps) == pytest.approx(2 * hourly)
    rp_lines = meters(Footprint(machine="running", gpu=GpuRate("GPU 1× RTX4090", 0.34, "test")), RP)
    rp_hourly = sum(m.usd_per_hour for m in rp_lines.values())
    assert projected_charge(rp_lines, 5400, RP) == pytest.approx(1.5 * rp_hourly)  # RunPod: per second
