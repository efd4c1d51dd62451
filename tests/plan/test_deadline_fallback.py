"""run.deadline over the fallback platforms too (issue #39): every candidate of the job's chain is judged,
each one not chosen says why in one line, and when only a fallback platform's machine meets the deadline
the plan names it and refuses the start (gpujob starts a job where its file places it; docs/forecast.md)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

from gpujob.plan.planner import build_plan
from tests.plan.plan_helpers import NOW, live, pod, volume
from tests.plan.test_plan_forecast import JOB

Write = Callable[..., object]

FALLBACK = """fallback:
  - platform: paperspace
    machine: {gpu: A100-80GB, regions: [ny2], template: ubuntu-22.04, public_ip: dynamic}
    storage: {volume_gb: 50, mount: /workspace}
"""


def _job(hours: float, spot: str) -> str:
    at = (NOW + timedelta(hours=hours)).strftime("%Y-%m-%dT%H:%M:%SZ")
    # one interruption an hour (checkpoint.mtbf) slows spot down; Paperspace has no spot tier
    job = JOB.replace("spot: true", f"spot: {spot}").replace("interval: 30m", "interval: 30m\n  mtbf: 1h")
    return job.replace("  step_time: 1s", f"  step_time: 1s\n  deadline: {at}") + FALLBACK


def test_only_the_fallback_platform_meets_the_deadline_the_plan_says_so_and_refuses(write_job: Write) -> None:
    plan = build_plan([write_job(_job(12, "true"))], live(), now=NOW, env={})
    (err,) = [f for f in plan.jobs[0].findings if f.code == "deadline"]
    assert err.severity == "error" and plan.blocked
    assert (
        "only paperspace (fallback[0]) meets it (A100-80GB on-demand on paperspace (fallback[0])"
        in err.summary
    )
    assert "nothing on runpod, where the job starts, does: the start is refused" in err.summary
    assert "A100-80GB spot: P90 finish" in err.detail and "past the deadline" in err.detail
    assert "make that platform the job's own" in err.fix


def test_a_fallback_candidate_is_judged_and_said_beside_the_chosen_one(write_job: Write) -> None:
    plan = build_plan([write_job(_job(12, "prefer"))], live(), now=NOW, env={})
    (chosen,) = [f for f in plan.jobs[0].findings if f.code == "deadline"]
    assert chosen.severity == "info" and "A100-80GB on-demand chosen" in chosen.summary
    lines = chosen.detail.split("; ")
    assert len(lines) == 2 and lines[0].startswith("A100-80GB spot: P90 finish"), lines
    there = lines[1]
    assert there.startswith("A100-80GB on-demand on paperspace (fallback[0]): P50 $"), there
    assert there.endswith("costs more"), there  # Paperspace's A100 is dearer than RunPod's


def test_nothing_in_the_chain_meets_it_names_the_best_p90_of_all(write_job: Write) -> None:
    plan = build_plan([write_job(_job(9, "prefer"))], live(), now=NOW, env={})
    (err,) = [f for f in plan.jobs[0].findings if f.code == "deadline"]
    assert err.severity == "error" and "nothing the job file allows finishes" in err.summary
    assert "on paperspace (fallback[0])" in err.detail


def test_a_preempted_spot_pod_that_would_miss_the_deadline_is_re_planned_on_demand(write_job: Write) -> None:
    # the spot pod was preempted (stopped); resumed as spot it finishes past the deadline at P90
    preempted = pod(status="stopped", raw_status="EXITED", spot=True, network_volume_id=volume().id)
    plan = build_plan([write_job(_job(12, "prefer"))], live(preempted, volume()), now=NOW, env={})
    jp = plan.jobs[0]
    (said,) = [f for f in jp.findings if f.code == "deadline"]
    assert said.severity == "warning", said  # watch says it in an event before it acts (gpujob.watch.acting)
    assert said.summary.startswith("re-planned for run.deadline 2026-11-30 00:00 UTC: resumed as it was"), (
        said
    )
    assert (
        "(A100-80GB spot) finishes at P90" in said.summary
        and "A100-80GB on-demand chosen instead" in said.summary
    )
    (replace,) = [a for a in jp.actions if a.kind.value == "replace"]
    assert any("run.deadline: A100-80GB on-demand finishes by it at P90" in r for r in replace.reasons), (
        replace
    )
    assert not [a for a in jp.actions if a.kind.value == "start"]


def test_a_stopped_pod_that_still_meets_the_deadline_resumes_as_it_was(write_job: Write) -> None:
    stopped = pod(status="stopped", raw_status="EXITED", spot=False, network_volume_id=volume().id)
    plan = build_plan([write_job(_job(12, "prefer"))], live(stopped, volume()), now=NOW, env={})
    jp = plan.jobs[0]
    assert not [f for f in jp.findings if f.code == "deadline"]
    assert [a.kind.value for a in jp.actions if a.resource_kind == "pod"] == ["start"]
