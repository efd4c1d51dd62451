"""What watch may apply on its own: real plans (gpujob.plan.planner) over hand-made live state."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from gpujob.live import LiveResource, RunFact
from gpujob.plan.model import ActionKind
from gpujob.plan.planner import build_plan
from gpujob.watch.policy import decide
from tests.owners import machine
from tests.plan.plan_helpers import NOW, RUNPOD_JOB, live, pod, volume

K = ActionKind
Write = Callable[..., Any]
VOL = dict(network_volume_id="nv-gpujob-job-ckpts")
VOLUME_DISK_JOB = RUNPOD_JOB.replace("  network_volume: {name: ckpts, size_gb: 100}\n", "  volume_gb: 50\n")


def decision(write_job: Write, machine: LiveResource, fact: RunFact | None = None, *, text: str = RUNPOD_JOB,
             extra: str = "", approved: set[str] | None = None, resources: list[LiveResource] | None = None):  # type: ignore[no-untyped-def]  # fmt: skip
    loaded = write_job(text + extra)
    state = live(
        machine, *(resources if resources is not None else [volume()]), runs={"job": fact} if fact else {}
    )
    plan = build_plan([loaded], state, now=NOW, env={})
    return decide(plan.jobs[0], loaded.spec, machine, approved=approved or set())


def kinds(d) -> list[str]:  # type: ignore[no-untyped-def]
    return [f"{a.resource_kind}.{a.kind.value}" for a in d.actions]


def test_a_preempted_spot_pod_is_started_and_its_run_launched(write_job: Write) -> None:
    spot = RUNPOD_JOB.replace("  gpu: A100-80GB\n", "  gpu: A100-80GB\n  spot: true\n")
    d = decision(write_job, pod(status="stopped", raw_status="EXITED", spot=True, **VOL), text=spot)
    assert kinds(d) == ["pod.start", "run.launch"]
    assert d.human == [] and d.approvals == set() and d.recovery and not d.finishing


def test_a_lost_run_is_relaunched(write_job: Write) -> None:
    d = decision(write_job, pod(**VOL), RunFact(state="lost", started_at="2026-11-29T10:00:00Z"))
    assert kinds(d) == ["run.launch"] and d.human == []


def test_rp1_replace_on_a_fresh_host_is_approved_when_only_the_container_disk_goes(write_job: Write) -> None:
    lost = pod(status="stopped", raw_status="EXITED", attributes={"host_lost_gpu": True}, **VOL)
    d = decision(write_job, lost)
    assert kinds(d) == ["pod.replace", "run.launch"]
    assert d.approvals == {"job.pod.replace"} and d.human == []
    assert d.actions[0].reasons[0].startswith(f"RP1: the last start of {machine('job')} found no free GPU")


def test_a_zero_gpu_pod_is_replaced(write_job: Write) -> None:
    zero = pod(gpu_count=0, attributes={"zero_gpu": True}, **VOL)
    d = decision(write_job, zero)
    assert kinds(d) == ["pod.replace", "run.launch"] and d.approvals == {"job.pod.replace"}


def test_rp1_replace_that_would_erase_a_volume_disk_waits_for_a_person(write_job: Write) -> None:
    lost = pod(status="stopped", raw_status="EXITED", volume_gb=50, attributes={"host_lost_gpu": True})
    d = decision(write_job, lost, text=VOLUME_DISK_JOB, resources=[])
    assert d.actions == []  # not even the pull: starting the pod for it would bill the GPU meanwhile
    assert [a.id for a in d.held] == [
        "job.checkpoints.pull",
        "job.pod.replace",
        "job.checkpoints.push",  # the checkpoints carried onto the new pod before its run starts
        "job.run.launch",
    ]
    assert len(d.human) == 1
    assert (
        "job.pod.replace needs your approval" in d.human[0] and "erase the machine's own disk" in d.human[0]
    )
    assert "gpujob watch --approve job.pod.replace" in d.human[0]


def test_a_replace_forced_by_an_edited_job_file_waits_for_a_person(write_job: Write) -> None:
    d = decision(write_job, pod(image="other/image:1", **VOL))
    assert d.actions == [] and [a.kind for a in d.held] == [K.REPLACE, K.LAUNCH]
    assert "image cannot change on an existing pod" in d.human[0]
    approved = decision(write_job, pod(image="other/image:1", **VOL), approved={"job.pod.replace"})
    assert kinds(approved) == ["pod.replace", "run.launch"] and approved.human == []


def test_on_finish_terminate_is_carried_out_through_the_gate(write_job: Write) -> None:
    fact = RunFact(state="exited", exit_code=0, started_at="x")
    d = decision(write_job, pod(**VOL), fact, extra="teardown:\n  on_finish: terminate\n")
    assert kinds(d) == ["checkpoints.pull", "pod.terminate"]
    assert d.approvals == {"job.pod.terminate"} and d.finishing and not d.recovery


def test_state_absent_is_never_applied_by_watch(write_job: Write) -> None:
    d = decision(write_job, pod(**VOL), text=RUNPOD_JOB.replace("state: running", "state: absent"))
    assert d.actions == []
    assert {a.kind for a in d.held} == {K.PULL, K.TERMINATE, K.DELETE_VOLUME}
    assert len(d.human) == 2 and all("needs your approval" in h for h in d.human)


def test_a_failed_run_needs_a_person(write_job: Write) -> None:
    d = decision(write_job, pod(**VOL), RunFact(state="exited", exit_code=3, started_at="x"))
    assert d.actions == [] and d.human == [
        "the run exited with code 3; it is not restarted for the same job file: read `gpujob logs`, fix the "
        "cause, then edit the job file"
    ]


def test_an_error_finding_holds_everything(write_job: Write) -> None:
    twin = pod(id="pod-2", status="stopped", raw_status="EXITED", **VOL)
    d = decision(write_job, pod(status="stopped", raw_status="EXITED", **VOL), resources=[volume(), twin])
    assert d.actions == [] and d.held and d.human[0].startswith("the plan has an error: 2 pods are named")


def test_a_prefer_jobs_stopped_spot_pod_is_replaced_on_demand_once_spot_is_gone(write_job: Write) -> None:
    prefer = RUNPOD_JOB.replace("  gpu: A100-80GB\n", "  gpu: A100-80GB\n  spot: prefer\n")
    stopped = pod(status="stopped", raw_status="EXITED", spot=True, **VOL)
    loaded = write_job(prefer)
    gone = live(stopped, volume(), spot_unavailable={"runpod": "HTTP 410 Gone"})
    d = decide(build_plan([loaded], gone, now=NOW, env={}).jobs[0], loaded.spec, stopped, approved=set())
    assert kinds(d) == ["pod.replace", "run.launch"] and d.approvals == {"job.pod.replace"} and d.human == []
    # while spot lives, the same pod is simply resumed as spot
    alive = decide(
        build_plan([loaded], live(stopped, volume()), now=NOW, env={}).jobs[0],
        loaded.spec,
        stopped,
        approved=set(),
    )
    assert kinds(alive) == ["pod.start", "run.launch"]
    # spot: true cannot resume it and holds everything with the error finding
    strict = write_job(RUNPOD_JOB.replace("  gpu: A100-80GB\n", "  gpu: A100-80GB\n  spot: true\n"))
    held = decide(build_plan([strict], gone, now=NOW, env={}).jobs[0], strict.spec, stopped, approved=set())
    assert held.actions == [] and "needs a spot resume" in held.human[0] and "prefer" in held.human[0]
    # spot: false written into the job file is an edit: that replace waits for a person
    edited = write_job(RUNPOD_JOB.replace("  gpu: A100-80GB\n", "  gpu: A100-80GB\n  spot: false\n"))
    waits = decide(
        build_plan([edited], live(stopped, volume()), now=NOW, env={}).jobs[0],
        edited.spec,
        stopped,
        approved=set(),
    )
    assert waits.actions == [] and "needs your approval" in waits.human[0]
