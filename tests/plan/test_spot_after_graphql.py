"""The plan once RunPod's spot API is gone (LiveState.spot_unavailable, filled by the RunPod provider
when GraphQL answered 410): spot: true blocks only a spot create or resume, prefer plans on-demand and
shows the difference, a running spot pod is never replaced for it, and community spot is labelled as
priced from the secure spot price."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from gpujob.cost.rates import gpu_rate
from gpujob.plan.model import ActionKind
from gpujob.plan.planner import build_plan
from gpujob.profile import load_profile
from tests.plan.plan_helpers import NOW, RUNPOD_JOB, live, pod, volume

GONE = {"runpod": "HTTP 410 Gone"}
VOL = dict(network_volume_id="nv-gpujob-job-ckpts", spot=True)
Write = Callable[..., Any]


def job(spot: str) -> str:
    return RUNPOD_JOB.replace("  gpu: A100-80GB\n", f"  gpu: A100-80GB\n  spot: {spot}\n")


def plan_of(write_job: Write, text: str, *resources: Any, gone: bool = True) -> Any:
    state = live(*resources, volume(), spot_unavailable=GONE if gone else {})
    return build_plan([write_job(text)], state, now=NOW, env={}).jobs[0]


def codes(jp: Any) -> dict[str, str]:
    return {f.code: f.severity for f in jp.findings}


def test_spot_true_is_an_error_only_when_a_spot_create_or_resume_is_planned(write_job: Write) -> None:
    create = plan_of(write_job, job("true"))
    assert codes(create)["spot-retired"] == "error"
    resume = plan_of(write_job, job("true"), pod(status="stopped", raw_status="EXITED", **VOL))
    (err,) = [f for f in resume.findings if f.code == "spot-retired"]
    assert (
        err.severity == "error" and "needs a spot resume" in err.summary and err.action_id == "job.pod.start"
    )
    running = plan_of(write_job, job("true"), pod(**VOL))
    assert codes(running)["spot-retired"] == "info"  # the running spot pod plans clean
    assert [a.kind for a in running.actions] == [ActionKind.NOOP]


def test_prefer_plans_on_demand_and_shows_the_difference(write_job: Write) -> None:
    jp = plan_of(write_job, job("prefer"))
    (note,) = [f for f in jp.findings if f.code == "spot-prefer"]
    assert note.severity == "info" and "more than spot" in note.summary
    (create,) = [a for a in jp.actions if a.kind is ActionKind.CREATE and a.resource_kind == "pod"]
    assert any("on-demand" in m.what for m in create.billing.starts)
    live_spot = plan_of(write_job, job("prefer"), gone=False)
    (create,) = [a for a in live_spot.actions if a.kind is ActionKind.CREATE and a.resource_kind == "pod"]
    assert any("spot" in m.what and "on-demand" not in m.what for m in create.billing.starts)
    assert "spot-prefer" not in codes(live_spot) and codes(live_spot)["spot-graphql"] == "info"


def test_prefer_never_replaces_a_running_spot_pod_but_replaces_a_stopped_one(write_job: Write) -> None:
    running = plan_of(write_job, job("prefer"), pod(**VOL))
    assert [a.kind for a in running.actions] == [ActionKind.NOOP]
    stopped = plan_of(write_job, job("prefer"), pod(status="stopped", raw_status="EXITED", **VOL))
    (replace,) = [a for a in stopped.actions if a.kind is ActionKind.REPLACE]
    assert [(c.path, c.before, c.after) for c in replace.changes if c.forces_replacement] == [
        ("spot", True, False)
    ]
    assert "error" not in codes(stopped).values()
    on_demand = plan_of(
        write_job,
        job("prefer"),
        pod(status="stopped", raw_status="EXITED", network_volume_id="nv-gpujob-job-ckpts"),
    )
    assert [a.kind for a in on_demand.actions if a.resource_kind == "pod"] == [ActionKind.START]


def test_community_spot_says_it_is_priced_from_the_secure_spot_price() -> None:
    rate = gpu_rate(load_profile("runpod"), [], "RTX4090", cloud="community", spot=True)
    assert rate is not None and "secure spot price" in rate.source
    secure = gpu_rate(load_profile("runpod"), [], "RTX4090", cloud="secure", spot=True)
    assert secure is not None and "secure spot price" not in secure.source
