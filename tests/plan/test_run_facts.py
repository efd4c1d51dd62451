"""build_plan with run facts (LiveState.runs): relaunch, resumed launch, on_finish, finished, unknown."""

from __future__ import annotations

from collections.abc import Callable

from gpujob.live import LiveState, RunFact
from gpujob.plan.model import ActionKind
from gpujob.plan.planner import build_plan
from tests.plan.plan_helpers import NOW, RUNPOD_JOB, live, pod, volume

K = ActionKind
Write = Callable[..., object]
VOL = dict(network_volume_id="nv-gpujob-job-ckpts")


def plan_with(write_job: Write, fact: RunFact | None, *, status: str = "running", on_finish: str = "keep"):  # type: ignore[no-untyped-def]
    text = RUNPOD_JOB + f"teardown:\n  on_finish: {on_finish}\n"
    loaded = write_job(text)
    runs = {"job": fact} if fact is not None else {}
    state = live(pod(status=status, **VOL), volume(), runs=runs)
    return build_plan([loaded], state, now=NOW, env={}), loaded


def ids(plan) -> list[str]:  # type: ignore[no-untyped-def]
    return [a.id for a in plan.all_actions() if a.kind is not K.NOOP]


def test_alive_run_changes_nothing(write_job: Write) -> None:
    fact = RunFact(state="running", last_checkpoint="step-400.pt", last_checkpoint_age_s=300)
    plan, _ = plan_with(write_job, fact)
    assert ids(plan) == []
    (noop,) = plan.all_actions()
    assert "the run is alive; last checkpoint step-400.pt, 5 min ago" in noop.reasons[0]
    assert plan.jobs[0].run == fact


def test_lost_run_is_relaunched_from_its_last_checkpoint(write_job: Write) -> None:
    fact = RunFact(
        state="lost",
        started_at="2026-11-29T10:00:00Z",
        last_checkpoint="step-400.pt",
        last_checkpoint_age_s=90,
    )
    plan, _ = plan_with(write_job, fact)
    assert ids(plan) == ["job.run.launch"]
    launch = plan.all_actions()[0]
    assert launch.reasons[0].startswith("run lost: started at 2026-11-29T10:00:00Z, no longer alive")
    assert "it resumes from the last checkpoint step-400.pt, written 90s ago" in launch.reasons
    assert launch.resource_id == "pod-gpujob-job" and launch.depends_on == [] and not launch.gated


def test_never_started_run_is_launched(write_job: Write) -> None:
    plan, _ = plan_with(write_job, RunFact(state="not_started"))
    assert ids(plan) == ["job.run.launch"]
    assert plan.all_actions()[0].reasons[0].startswith("run not started:")


def test_journal_pending_launch_is_resumed_when_ssh_was_not_read(write_job: Write) -> None:
    plan, _ = plan_with(
        write_job, RunFact(reason="not read over SSH (--no-refresh-runs)", launch_pending=True)
    )
    assert ids(plan) == ["job.run.launch"]
    assert "a previous apply stopped before the run was launched" in plan.all_actions()[0].reasons[0]
    assert any(f.code == "run-status" and f.severity == "info" for f in plan.jobs[0].findings)
    # ...but not when the SSH read shows the run alive (the launch finished; only its journal line is missing).
    plan, _ = plan_with(write_job, RunFact(state="running", launch_pending=True))
    assert ids(plan) == []


def test_exit_0_with_on_finish_stop_stops_the_pod(write_job: Write) -> None:
    plan, _ = plan_with(write_job, RunFact(state="exited", exit_code=0), on_finish="stop")
    assert ids(plan) == ["job.pod.stop"]
    stop = plan.all_actions()[0]
    assert stop.reasons[0] == "the run exited 0 and teardown.on_finish is stop" and not stop.gated
    # a helper the run left behind (an upload, an eval) still gets its SIGTERM save before the stop
    assert stop.reasons[1].startswith("first: SIGTERM to the run and every helper of job job, up to 30s")
    assert stop.billing.stops and plan.jobs[0].after_usd_per_hour < plan.jobs[0].current_usd_per_hour


def test_exit_0_with_on_finish_terminate_pulls_then_gated_terminate(write_job: Write) -> None:
    plan, _ = plan_with(write_job, RunFact(state="exited", exit_code=0), on_finish="terminate")
    acts = [a for a in plan.all_actions() if a.kind is not K.NOOP]
    assert [(a.id, a.gated) for a in acts] == [("job.checkpoints.pull", False), ("job.pod.terminate", True)]
    assert acts[1].depends_on == ["job.checkpoints.pull"]
    assert acts[1].reasons[0] == "the run exited 0 and teardown.on_finish is terminate"


def test_exit_0_with_on_finish_keep_only_says_so(write_job: Write) -> None:
    plan, _ = plan_with(write_job, RunFact(state="exited", exit_code=0))
    assert ids(plan) == []
    assert any(f.code == "run-finished" for f in plan.jobs[0].findings)


def test_exit_0_of_an_earlier_job_file_is_launched_again(write_job: Write) -> None:
    fact = RunFact(state="exited", exit_code=0, launched_digest="0" * 64)
    plan, _ = plan_with(write_job, fact, on_finish="stop")
    assert ids(plan) == ["job.run.launch"]
    assert "under an earlier version of the job file" in plan.all_actions()[0].reasons[0]


def test_failed_run_is_not_relaunched_for_the_same_file(write_job: Write) -> None:
    for fact in (RunFact(state="exited", exit_code=3), RunFact(state="setup_failed")):
        plan, _ = plan_with(write_job, fact, on_finish="stop")
        assert ids(plan) == []
        assert any(f.code == "run-failed" and f.severity == "warning" for f in plan.jobs[0].findings)


def test_finished_run_is_not_restarted_and_teardown_is_finished(write_job: Write) -> None:
    finished = RunFact(finished_for_digest=True)
    # Pod stopped by on_finish: state running would start + launch it; the finished mark forbids it.
    plan, _ = plan_with(write_job, finished, status="stopped", on_finish="stop")
    assert ids(plan) == []
    assert "not started again until the job file changes" in plan.all_actions()[0].reasons[0]
    # Killed mid-teardown: the pod still runs, the stop is planned again.
    plan, _ = plan_with(write_job, finished, on_finish="stop")
    assert ids(plan) == ["job.pod.stop"]


def test_unknown_run_status_is_a_warning_not_an_action(write_job: Write) -> None:
    plan, _ = plan_with(write_job, RunFact(state="unknown", reason="no answer over SSH within 8s"))
    assert ids(plan) == []
    (f,) = [f for f in plan.jobs[0].findings if f.code == "run-status"]
    assert f.severity == "warning" and f.summary == "run status unknown: no answer over SSH within 8s"
    assert not plan.blocked


def test_stopped_machine_still_gets_start_and_one_launch(write_job: Write) -> None:
    plan, _ = plan_with(
        write_job, RunFact(reason="the machine is not running", launch_pending=True), status="stopped"
    )
    assert ids(plan) == ["job.pod.start", "job.run.launch"]


def test_run_facts_do_not_change_the_live_fingerprint(write_job: Write) -> None:
    loaded = write_job()
    base = live(pod(**VOL), volume())
    with_runs = LiveState.model_validate(
        base.model_dump() | {"runs": {"job": RunFact(state="lost", last_checkpoint="a")}}
    )
    a = build_plan([loaded], base, now=NOW, env={})
    b = build_plan([loaded], with_runs, now=NOW, env={})
    assert a.live_fingerprint == b.live_fingerprint and ids(a) != ids(b)


def test_a_booting_machine_gets_its_launch_and_a_stopping_one_none(write_job: Write) -> None:
    """A pod still starting (a migrated pod's first boot, a restart) has no run alive yet: the plan
    launches it, and says why, instead of calling the pod running. A Paperspace machine on its way down
    (`stopping`, also pending) gets no launch: it would never come up for it."""
    not_running = RunFact(reason="the machine is not running")
    text = RUNPOD_JOB + "teardown:\n  on_finish: keep\n"
    for raw in ("STARTING", "CREATED", "PROVISIONING"):
        loaded = write_job(text)
        state = live(pod(status="pending", raw_status=raw, **VOL), volume(), runs={"job": not_running})
        plan = build_plan([loaded], state, now=NOW, env={})
        assert ids(plan) == ["job.run.launch"], raw
        launch = plan.all_actions()[0]
        assert launch.reasons[0] == (
            f"pod {state.resources[0].name} is still starting ({raw}): apply waits for it to run, then launches the run "
            "unless one is already alive"
        )
        assert launch.resource_id == "pod-gpujob-job" and launch.depends_on == []
    # A finished run stays finished while its pod boots.
    finished = not_running.model_copy(update={"finished_for_digest": True})
    state = live(pod(status="pending", raw_status="STARTING", **VOL), volume(), runs={"job": finished})
    assert ids(build_plan([write_job(text)], state, now=NOW, env={})) == []
    # On its way down: no launch, and the reason says what to do.
    going = live(pod(status="pending", raw_status="stopping", **VOL), volume(), runs={"job": not_running})
    plan = build_plan([write_job(text)], going, now=NOW, env={})
    assert ids(plan) == []
    assert plan.all_actions()[0].reasons == [
        f"pod {going.resources[0].name} is stopping: plan again once it is off, to start it again"
    ]
