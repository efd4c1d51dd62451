"""The Iron Law on the pod's own stop (gpujob.plan.stop_law): teardown.on_finish / on_failure: stop is
done by the launcher on the pod, which cannot pull first, so where checkpoint.dir is on a disk a stop
bills at 2× or deletes it plans as an error, unless `<job>.pod.self-stop` is approved."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

from gpujob.plan.model import Finding, Plan
from gpujob.plan.planner import build_plan
from gpujob.plan.stop_law import CODE, accept_risks, self_stops, stop_risk
from gpujob.profile import load_profile
from tests.plan.plan_helpers import NOW, RUNPOD_JOB, live, volume
from tests.plan.test_trap_findings import DISK_JOB

Write = Callable[..., object]


def _plan(write_job: Write, text: str, approvals: set[str] | None = None) -> Plan:
    plan = build_plan([write_job(text)], live(), now=NOW, env={})
    return accept_risks(plan, approvals or set())


def _coded(plan: Plan) -> list[Finding]:
    return [f for f in plan.all_findings() if f.code == CODE]


def test_on_finish_stop_with_checkpoints_on_the_pods_disk_plans_as_an_error(write_job: Write) -> None:
    plan = _plan(write_job, DISK_JOB + "teardown: {on_finish: stop}\n")
    (f,) = _coded(plan)
    assert f.severity == "error" and plan.blocked
    assert f.summary.startswith("teardown.on_finish: stop is done on the pod itself, which cannot pull first")
    assert "bills 2× while stopped (RP4)" in f.summary and "about 30 days" in f.summary
    assert (
        "--approve job.pod.self-stop" in f.fix
        and f.source is not None
        and f.source.key == "teardown.on_finish"
    )


def test_its_approval_turns_the_error_into_a_warning_that_says_so(write_job: Write) -> None:
    text = DISK_JOB + "teardown: {on_failure: stop}\n"
    plan = _plan(write_job, text, {"job.pod.self-stop"})
    (f,) = _coded(plan)
    assert f.severity == "warning" and not plan.blocked and "teardown.on_failure" in f.summary
    assert f.summary.endswith("(risk accepted: job.pod.self-stop approved)")
    assert _coded(_plan(write_job, text, {"other.pod.self-stop"}))[0].severity == "error"


def test_a_network_volume_or_a_kept_pod_needs_no_approval(write_job: Write) -> None:
    nv = build_plan(
        [write_job(RUNPOD_JOB + "teardown: {on_finish: stop}\n")], live(volume()), now=NOW, env={}
    )
    assert _coded(nv) == []
    assert _coded(_plan(write_job, DISK_JOB)) == []  # teardown keep: no on-box stop


def test_which_stops_are_on_box_and_what_a_stop_does_to_each_tier(write_job: Write) -> None:
    spec = write_job(DISK_JOB + "teardown: {on_finish: stop, on_failure: stop}\n").spec  # type: ignore[attr-defined]
    assert self_stops(spec) == ["on_finish", "on_failure"]
    cell = spec.model_copy(update={"name": "sweep--q0"})
    assert self_stops(cell) == ["on_failure"]  # a sweep queue's finish is stopped by gpujob, after its pull
    rp, ps = load_profile("runpod"), load_profile("paperspace")
    assert stop_risk(rp, spec, "network_volume") is None
    assert "wipes" in (stop_risk(rp, spec, "container_disk") or "")
    assert stop_risk(ps, spec.model_copy(update={"platform": "paperspace"}), "block_storage") is None


def test_an_unread_balance_is_a_warning_where_a_stopped_pod_holds_unpulled_checkpoints(
    write_job: Write,
) -> None:
    """RP8 without GraphQL: nothing can see the balance run low, so a stopped pod holding un-pulled
    checkpoints turns the unread-balance note into a warning naming the deletion clock."""
    from tests.plan.plan_helpers import ago, pod

    gone = ["runpod: balance not read: RunPod's GraphQL API is gone (HTTP 404)"]
    text = DISK_JOB.replace("state: running", "state: stopped")
    parked = pod(status="stopped", raw_status="EXITED", volume_gb=50, started_at=ago(3))
    plan = build_plan([write_job(text)], live(parked, account_notes=gone), now=NOW, env={})
    (bal,) = [f for f in plan.all_findings() if f.code == "RP8" and "balance" in f.summary]
    assert bal.severity == "warning" and "no longer reports the balance" in bal.summary
    assert (
        "holds un-pulled checkpoints, and RunPod deletes a stopped pod when the balance runs low"
        in bal.summary
    )
    assert "about 30 days" in bal.summary and "Auto-Pay" in bal.fix and "gpujob doctor" in bal.fix
    # everything home: the note stays a note
    running = pod(volume_gb=50, started_at=ago(3))
    quiet = build_plan([write_job(DISK_JOB)], live(running, account_notes=gone), now=NOW, env={})
    (note,) = [f for f in quiet.all_findings() if f.code == "RP8" and "balance" in f.summary]
    assert note.severity == "info"


def test_doctor_says_what_it_can_of_auto_pay() -> None:
    from types import SimpleNamespace

    from gpujob.doctor.autopay import autopay_line

    def res(outcome: str, detail: str = "") -> SimpleNamespace:
        return SimpleNamespace(
            platform="runpod", call="POST /graphql query myself", outcome=outcome, detail=detail
        )

    ok = autopay_line([res("ok")])
    assert ok is not None and ok.outcome == "ok" and "balance is readable" in ok.detail
    bad = autopay_line([res("error", "HTTP 404: gone")])
    assert (
        bad is not None
        and bad.outcome == "warn"
        and "cannot be read either (GraphQL myself: error" in bad.detail
    )
    assert "HTTP 404" not in bad.detail  # the API's own words are shown once, made safe, with the checks
    assert bad.fix is not None and "Auto-Pay" in bad.fix
    assert autopay_line([]) is None


def test_the_on_box_budget_and_stall_stops_are_judged_like_a_teardown_stop(write_job: Write) -> None:
    text = DISK_JOB + "budget: {max_total_usd: 50}\n"
    plan = _plan(write_job, text)
    (f,) = _coded(plan)
    assert f.severity == "error" and plan.blocked
    assert f.summary.startswith("the stop when budget.max_total_usd trips (the launcher's on-box agent")
    assert "bills 2× while stopped (RP4)" in f.summary and "--approve job.pod.self-stop" in f.fix
    assert f.source is not None and f.source.key == "budget.max_total_usd"
    accepted = _coded(_plan(write_job, text, {"job.pod.self-stop"}))
    assert accepted[0].severity == "warning" and "risk accepted" in accepted[0].summary
    spec = write_job(DISK_JOB).spec  # type: ignore[attr-defined]
    run = spec.run.model_copy(update={"stall_after": timedelta(minutes=10)})
    assert self_stops(spec.model_copy(update={"run": run})) == ["run.stall_after"]


def test_the_on_box_budget_stop_is_allowed_on_a_network_volume(write_job: Write) -> None:
    nv = build_plan(
        [write_job(RUNPOD_JOB + "budget: {max_total_usd: 50}\n")], live(volume()), now=NOW, env={}
    )
    assert _coded(nv) == []
