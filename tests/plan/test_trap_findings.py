"""Issue 14's recorded traps, walked into through the planner with live facts: the balance (RP8), a
stopped pod with un-pulled checkpoints (RP8), the disk budget (U6), a Paperspace machine without an
address, a network volume on the community cloud (RP7), the RP1 fix, and checkpoints that are not being
written or not resumed from."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

from gpujob.live import Account, RunFact
from gpujob.plan.balance import lasts
from gpujob.plan.model import ActionKind, Finding, Plan
from gpujob.plan.planner import build_plan
from gpujob.plan.records import PulledFile, PullRecord
from tests.owners import machine
from tests.plan.plan_helpers import DIGEST, NOW, RUNPOD_JOB, ago, live, owned_volume, pod, volume

K = ActionKind
Write = Callable[..., object]
NV = {"network_volume_id": "nv-gpujob-job-ckpts"}

DISK_JOB = f"""
version: 1
name: job
platform: runpod
state: running
machine:
  gpu: A100-80GB
  regions: [EU-RO-1]
  image: {DIGEST}
  container_disk_gb: 20
storage:
  volume_gb: 50
checkpoint:
  dir: /workspace/ckpt
  interval: 30m
  keep: 5
run:
  command: python train.py
  max_runtime: 48h
"""

PAPERSPACE_JOB = """
version: 1
name: seg
platform: paperspace
state: running
machine:
  gpu: A4000
  regions: [ny2]
  template: ml-in-a-box
  public_ip: none
  auto_shutdown: 24h
storage:
  volume_gb: 100
checkpoint:
  dir: /storage/ckpt
  interval: 30m
run:
  command: python train.py
"""


def plan_for(write_job: Write, state, text: str = RUNPOD_JOB, pulls=None, **kw) -> Plan:  # type: ignore[no-untyped-def]
    loaded = write_job(text, **kw)
    return build_plan([loaded], state, now=NOW, env={}, pull_records=pulls)


def coded(plan: Plan, code: str) -> list[Finding]:
    return [f for f in plan.all_findings() if f.code == code]


def account(balance: float, spend: float | None) -> dict[str, Account]:
    return {
        "runpod": Account(
            platform="runpod",
            balance_usd=balance,
            spend_per_hour_usd=spend,
            read_at=NOW,
            source="RunPod GraphQL myself",
        )
    }


def record(
    resource_id: str, *, at=NOW, files: dict[str, int] | None = None, pulled: bool = True
) -> PullRecord:  # type: ignore[no-untyped-def]
    files = files if files is not None else {"step_000100.pt": 1_000}
    return PullRecord(
        job="job",
        platform="runpod",
        resource_id=resource_id,
        remote_dir="/workspace/ckpt",
        local_dir="./checkpoints",
        remote_files={n: "ab" * 32 for n in files},
        files=[
            PulledFile(name=n, size=size, sha256="ab" * 32, remote_sha256="ab" * 32, verified=True, at=at)
            for n, size in files.items()
        ]
        if pulled
        else [],
        at=at,
    )


# --- 1. RP8 balance ----------------------------------------------------------------------------


def test_balance_says_how_long_it_lasts_at_the_planned_rate(write_job: Write) -> None:
    running = pod(**NV, cost_per_hour=1.19)
    plan = plan_for(write_job, live(running, volume(), accounts=account(500.0, 1.19)))
    (f,) = coded(plan, "RP8")
    rate = plan.jobs[
        0
    ].after_usd_per_hour  # a no-op plan: the pod, and the volume the account's 1.19 leaves out
    assert (
        rate > 1.19
        and f.severity == "info"
        and f"lasts {500 / rate / 24:.1f} days at ${rate:.2f}/h" in f.summary
    )
    assert f.source is not None and f.source.key == "state"
    assert plan.jobs[0].current_usd_per_hour == rate and not plan.blocked


def test_balance_under_three_days_warns_and_counts_what_the_plan_starts(write_job: Write) -> None:
    plan = plan_for(write_job, live(volume(), accounts=account(40.0, 0.25)))  # the plan creates the pod
    (f,) = coded(plan, "RP8")
    job = plan.jobs[0]
    rate = 0.25 + job.after_usd_per_hour - job.current_usd_per_hour
    assert rate > 1.0  # the A100 the plan starts, not just the account's current spend
    assert f.severity == "warning" and f"lasts {40 / rate:.1f} h at ${rate:.2f}/h: under 3 days" in f.summary
    assert "spends $0.25/h now" in f.detail and "auto-pay" in f.fix
    assert not plan.blocked


def test_balance_that_cannot_cover_max_runtime_blocks_with_the_top_up_needed(write_job: Write) -> None:
    plan = plan_for(
        write_job,
        live(volume(), accounts=account(20.0, 0.0)),
        RUNPOD_JOB + "  max_runtime: 48h\n",
    )
    (f,) = coded(plan, "RP8")
    job = plan.jobs[0]
    # At least what the job bills after the plan: the pod it starts and the volume, which the account's
    # $0.00/h (a figure that counts running pods only) leaves out.
    rate = job.after_usd_per_hour
    assert rate > job.after_usd_per_hour - job.current_usd_per_hour
    assert f.severity == "error" and "less than run.max_runtime (48 h)" in f.summary
    assert f"add at least ${rate * 48 - 20:,.2f} to the RunPod balance" in f.fix
    assert f.source is not None and f.source.key == "run.max_runtime" and f.source.line == 17
    assert plan.blocked


def test_balance_rate_sums_every_job_of_the_plan(write_job: Write) -> None:
    a = write_job(RUNPOD_JOB, name="a.yaml")
    b = write_job(RUNPOD_JOB.replace("name: job", "name: other"), name="b.yaml")
    plan = build_plan([a, b], live(accounts=account(100.0, 0.0)), now=NOW, env={})
    both = sum(j.after_usd_per_hour for j in plan.jobs)
    texts = [f.summary for f in coded(plan, "RP8")]
    assert len(texts) == 2 and all(f"at ${both:.2f}/h" in t for t in texts)


def test_balance_counts_what_keeps_billing_when_the_account_reports_nothing(write_job: Write) -> None:
    """A stopped pod's volume disk (2x the running price) and a kept network volume bill on, though the
    account's spend rate (the simulator's counts running pods only) says $0.00/h: never "nothing bills"."""
    from gpujob.profile import load_profile

    stopped = pod(status="stopped", raw_status="EXITED", volume_gb=50, cost_per_hour=0.0)
    kept = volume(name=owned_volume("job", "data"), volume_gb=20)
    text = DISK_JOB.replace("state: running", "state: stopped")
    plan = plan_for(write_job, live(stopped, kept, accounts=account(50.0, 0.0)), text)
    (f,) = [f for f in coded(plan, "RP8") if "balance" in f.summary]
    profile = load_profile("runpod")
    disk = profile.tier("volume_disk").hourly_price(50, stopped=True)
    volume_hour = profile.tier("network_volume").hourly_price(20)
    rate = plan.jobs[0].after_usd_per_hour
    assert rate >= disk + volume_hour - 1e-6 and disk > 0  # the plan's own figure counts both
    assert "nothing bills" not in f.summary, f.summary
    assert f.severity == "info" and f"at ${rate:.4f}/h" in f.summary and lasts(50 / rate) in f.summary, (
        f.summary
    )
    assert "reports $0.00/h now" in f.detail and "leaves out" in f.detail, f.detail


def test_balance_says_nothing_bills_only_when_nothing_does(write_job: Write) -> None:
    plan = plan_for(
        write_job, live(accounts=account(50.0, 0.0)), DISK_JOB.replace("state: running", "state: absent")
    )
    assert plan.jobs[0].after_usd_per_hour == 0 and coded(plan, "RP8") == []  # an absent job is not judged
    other = write_job(RUNPOD_JOB.replace("state: running", "state: stopped"), name="b.yaml")
    plan = build_plan([other], live(accounts=account(50.0, 0.0)), now=NOW, env={})
    (f,) = coded(plan, "RP8")
    assert plan.jobs[0].after_usd_per_hour == 0 and "nothing bills after this plan" in f.summary, f.summary


def test_a_failed_balance_read_is_a_note_not_a_block(write_job: Write) -> None:
    state = live(pod(**NV), volume(), account_notes=["runpod: balance not read: GraphQL 503"])
    plan = plan_for(write_job, state)
    (f,) = coded(plan, "RP8")
    assert f.severity == "info" and "was not read (GraphQL 503)" in f.summary
    assert not plan.blocked and not plan.has_changes


# --- 2. RP8 stopped pod with un-pulled checkpoints ----------------------------------------------

STOPPED = {"status": "stopped", "raw_status": "EXITED", "volume_gb": 50, "started_at": ago(3)}


def test_stopped_pod_with_unpulled_checkpoints_warns_with_the_way_home(write_job: Write) -> None:
    parked = pod(**STOPPED)
    plan = plan_for(
        write_job,
        live(parked),
        DISK_JOB.replace("keep: 5", "keep: 1"),
        **{"state:__running": "state: stopped"},
    )
    (f,) = coded(plan, "RP8")
    assert f.severity == "warning" and f"stopped pod {machine('job')} holds un-pulled" in f.summary
    assert "no pull on record" in f.summary and "about 30 days" in f.detail
    assert "$10.00/mo at the stopped rate" in f.detail  # 50 GB × $0.20 (2× while stopped)
    assert f.fix.startswith("set state: running and `gpujob apply`") and "`gpujob pull`" in f.fix
    assert f.source is not None and f.source.key == "state"


def test_stopped_pod_is_quiet_only_when_a_pull_came_after_its_run_finished(write_job: Write) -> None:
    text = DISK_JOB.replace("state: running", "state: stopped")
    finished = pod(**STOPPED, attributes={"run_finished_at": ago(2).isoformat()})
    fine = plan_for(write_job, live(finished), text, pulls={"job": record(finished.id, at=ago(1))})
    assert coded(fine, "RP8") == []
    # RunPod does not say when a pod stopped: a pull while the run could still write is not enough
    stopped_at = {"stopped_at": ago(0.5).isoformat()}
    busy = pod(**STOPPED, attributes=stopped_at)
    plan = plan_for(write_job, live(busy), text, pulls={"job": record(busy.id, at=ago(1))})
    assert (
        "taken while the run could still write: what it wrote until gpujob stopped it (2026-11-29 11:30 UTC)"
        in (coded(plan, "RP8")[0].summary)
    )
    old = plan_for(write_job, live(finished), text, pulls={"job": record(finished.id, at=ago(4))})
    assert "older than the pod's last start" in coded(old, "RP8")[0].summary
    partial = record(finished.id, at=ago(1), pulled=False)
    half = plan_for(write_job, live(finished), text, pulls={"job": partial})
    assert "the last pull is incomplete (1 not pulled, 0 not verified)" in coded(half, "RP8")[0].summary
    other = plan_for(write_job, live(finished), text, pulls={"job": record("pod-else", at=ago(1))})
    assert (
        "holds un-pulled checkpoints" in coded(other, "RP8")[0].summary
    )  # a pull of another pod counts for nothing


def test_a_network_volume_keeps_stopped_pods_out_of_it(write_job: Write) -> None:
    parked = pod(**{**STOPPED, **NV})
    plan = plan_for(write_job, live(parked, volume()), **{"state:__running": "state: stopped"})
    assert coded(plan, "RP8") == []


# --- 3. disk budget ---------------------------------------------------------------------------


def test_five_forty_gb_checkpoints_do_not_fit_a_fifty_gb_volume(write_job: Write) -> None:
    text = RUNPOD_JOB.replace("size_gb: 100", "size_gb: 50").replace(
        "interval: 30m", "interval: 30m\n  keep: 5\n  size_gb: 40"
    )
    plan = plan_for(write_job, live(), text)
    (f,) = coded(plan, "U6")
    assert "keep 5 × 40 GB (checkpoint.size_gb) = 200 GB, 240 GB while the next one is written" in f.summary
    assert "does not fit the 50 GB network volume" in f.summary and "never shrink" in f.detail
    # 190 GB more of standard network volume at $0.07/GB/mo
    assert (
        f.fix
        == "raise storage.network_volume.size_gb to at least 240 (+$13.30/mo; it can never be shrunk back)"
    )
    assert f.source is not None and f.source.key == "storage.network_volume.size_gb"


def test_disk_budget_uses_the_newest_pulled_checkpoint_when_no_size_is_given(write_job: Write) -> None:
    running = pod(volume_gb=50)
    files = {"step_000100/model.pt": 6_000_000_000, "step_000100/optim.pt": 4_000_000_000}
    plan = plan_for(write_job, live(running), DISK_JOB, pulls={"job": record(running.id, files=files)})
    (f,) = coded(plan, "U6")
    assert "keep 5 × 10 GB (step_000100 in the last pull) = 50 GB, 60 GB" in f.summary
    assert "fit the 50 GB volume disk" in f.summary
    assert f.fix.startswith("raise storage.volume_gb to at least 60") and f.fix.endswith(
        "lower checkpoint.keep to 4"
    )


def test_checkpoints_that_fit_say_nothing(write_job: Write) -> None:
    text = RUNPOD_JOB.replace("interval: 30m", "interval: 30m\n  keep: 3\n  size_gb: 20")
    assert coded(plan_for(write_job, live(), text), "U6") == []


# --- 4. Paperspace without a public address -----------------------------------------------------


def test_paperspace_without_public_ip_cannot_launch_or_pull(write_job: Write) -> None:
    plan = plan_for(write_job, live(), PAPERSPACE_JOB)
    (f,) = coded(plan, "unreachable")
    assert f.severity == "warning" and "cannot launch run.command or pull checkpoints" in f.summary
    assert "refuse to destroy" in f.detail
    assert "public_ip: static" in f.fix and "public_ip: dynamic (only at create)" in f.fix
    assert f.source is not None and f.source.key == "machine.public_ip" and f.source.line == 9


def test_paperspace_with_an_address_is_reachable(write_job: Write) -> None:
    plan = plan_for(write_job, live(), PAPERSPACE_JOB.replace("public_ip: none", "public_ip: dynamic"))
    assert coded(plan, "unreachable") == []


# --- 5. RP7 community cloud --------------------------------------------------------------------


def test_network_volume_on_community_cloud_is_an_error(write_job: Write) -> None:
    plan = plan_for(write_job, live(), RUNPOD_JOB.replace("  regions:", "  cloud: community\n  regions:"))
    rp7 = [f for f in coded(plan, "RP7") if "Secure Cloud only" in f.summary]
    assert len(rp7) == 1 and rp7[0].severity == "error" and plan.blocked
    assert rp7[0].source is not None and rp7[0].source.key == "machine.cloud"
    fixed = plan_for(write_job, live(), RUNPOD_JOB.replace("  regions:", "  cloud: secure\n  regions:"))
    assert not [f for f in coded(fixed, "RP7") if "Secure Cloud only" in f.summary]


# --- 6. RP1: the printed fix is what the planner does ------------------------------------------


def test_rp1_fix_is_the_replace_the_next_plan_makes_and_keeps_the_volume(write_job: Write) -> None:
    stopped = pod(status="stopped", raw_status="EXITED", **NV)
    (start,) = [a for a in plan_for(write_job, live(stopped, volume())).all_actions() if a.kind is K.START]
    (rp1,) = [f for f in start.findings if f.code == "RP1"]
    assert "state: absent" not in rp1.fix and "replaces the pod on a fresh host" in rp1.fix
    # What the fix promises: after a start found no GPU, the next plan replaces the pod, keeps the volume
    lost = pod(status="stopped", raw_status="EXITED", attributes={"host_lost_gpu": True}, **NV)
    after = plan_for(write_job, live(lost, volume()))
    assert [a.kind for a in after.all_actions()] == [K.REPLACE, K.LAUNCH]
    assert not any(a.kind is K.DELETE_VOLUME for a in after.all_actions())
    # ... and pulls first when the checkpoints are on the pod's own disk
    own = pod(status="stopped", raw_status="EXITED", volume_gb=50, attributes={"host_lost_gpu": True})
    kinds = [a.kind for a in plan_for(write_job, live(own), DISK_JOB).all_actions()]
    assert kinds == [K.PULL, K.REPLACE, K.PUSH, K.LAUNCH]


# --- 7. are checkpoints written, and resumed from? ----------------------------------------------


def run_fact(**kw: object) -> dict[str, RunFact]:
    base: dict[str, object] = {
        "state": "running",
        "resource_id": "pod-gpujob-job",
        "started_at": "2026-11-29T09:00:00Z",
    }
    base.update(kw)
    return {"job": RunFact(**base)}  # type: ignore[arg-type]


def test_alive_run_with_a_stale_checkpoint_warns(write_job: Write) -> None:
    fact = run_fact(last_checkpoint="step_000100.pt", last_checkpoint_age_s=75 * 60)
    plan = plan_for(write_job, live(pod(**NV), volume(), runs=fact))
    (f,) = coded(plan, "checkpoint-stale")
    assert (
        "step_000100.pt) is 1h 15m old while the run is alive: more than 2× checkpoint.interval (30m)"
        in f.summary
    )
    assert "$GPUJOB_CHECKPOINT_DIR every $GPUJOB_CHECKPOINT_INTERVAL seconds (1800)" in f.fix
    assert f.source is not None and f.source.key == "checkpoint.interval"
    fresh = run_fact(last_checkpoint="step_000100.pt", last_checkpoint_age_s=50 * 60)
    assert coded(plan_for(write_job, live(pod(**NV), volume(), runs=fresh)), "checkpoint-stale") == []


def test_a_just_restarted_run_is_given_time_and_a_run_with_none_is_not(write_job: Write) -> None:
    recent = (NOW - timedelta(minutes=20)).strftime("%Y-%m-%dT%H:%M:%SZ")
    young = run_fact(started_at=recent, last_checkpoint="step_000100.pt", last_checkpoint_age_s=3 * 3600)
    assert coded(plan_for(write_job, live(pod(**NV), volume(), runs=young)), "checkpoint-stale") == []
    none = run_fact(last_checkpoint=None)
    (f,) = coded(plan_for(write_job, live(pod(**NV), volume(), runs=none)), "checkpoint-stale")
    assert "has been up 3h and /workspace/ckpt holds no checkpoint" in f.summary


def test_run_that_restarted_at_step_zero_after_checkpoints_warns(write_job: Write) -> None:
    fact = run_fact(
        last_checkpoint="step_000010.pt",
        last_checkpoint_age_s=60,
        first_step=1,
        earlier_last_step=900,
        earlier_span_s=7200,
    )
    plan = plan_for(write_job, live(pod(**NV), volume(), runs=fact))
    (f,) = coded(plan, "resume-from-zero")
    assert "started again from step 0 although the run before it reached step 900" in f.summary
    assert "reported steps for 2h, longer than checkpoint.interval (30m)" in f.detail
    assert f.source is not None and f.source.key == "run.command"
    resumed = run_fact(first_step=901, earlier_last_step=900, earlier_span_s=7200)
    assert coded(plan_for(write_job, live(pod(**NV), volume(), runs=resumed)), "resume-from-zero") == []


def test_a_pull_before_the_start_is_evidence_checkpoints_existed(write_job: Write) -> None:
    running = pod(**NV)
    fact = run_fact(
        resource_id=running.id, first_step=1, earlier_last_step=40, earlier_span_s=60
    )  # short run
    assert coded(plan_for(write_job, live(running, volume(), runs=fact)), "resume-from-zero") == []
    pulls = {"job": record(running.id, at=ago(4))}  # pulled at 08:00, this run started 09:00
    plan = plan_for(write_job, live(running, volume(), runs=fact), pulls=pulls)
    assert "a pull listed checkpoints before it started" in coded(plan, "resume-from-zero")[0].detail


def test_traps_leave_no_finding_on_a_quiet_job(write_job: Write) -> None:
    plan = plan_for(
        write_job, live(pod(**NV), volume(), runs=run_fact(last_checkpoint="s.pt", last_checkpoint_age_s=5))
    )
    codes = {f.code for f in plan.all_findings()}
    assert not codes & {"RP8", "U6", "unreachable", "checkpoint-stale", "resume-from-zero"}


def test_the_journal_says_when_gpujob_stopped_the_pod_and_whether_the_run_finished(write_job: Write) -> None:
    from gpujob.apply.journal import Journal
    from gpujob.apply.runfacts import journal_machine_facts
    from gpujob.state import open_store

    loaded = write_job(DISK_JOB)
    parked = pod(**STOPPED)
    journal = Journal(open_store(loaded.path), "job")  # type: ignore[attr-defined]
    journal.append("done", ago(3), action_id="job.run.launch")
    journal.append("done", ago(2), action_id="job.run.finished", detail="exit 0; spec x")
    journal.append("done", ago(1), action_id="job.pod.stop", resource_id=parked.id)
    (seen,) = journal_machine_facts([loaded], live(parked)).resources
    assert seen.attributes["stopped_at"] == ago(1).isoformat()
    assert seen.attributes["run_finished_at"] == ago(2).isoformat()
    journal.append("done", ago(0.5), action_id="job.run.launch")  # a new run: the finish no longer counts
    (again,) = journal_machine_facts([loaded], live(parked)).resources
    assert "run_finished_at" not in again.attributes and again.attributes["stopped_at"] == ago(1).isoformat()


def stop_findings_of(plan: Plan) -> list[Finding]:
    (stop,) = [a for a in plan.all_actions() if a.kind is K.STOP]
    return [f for f in stop.findings if f.code == "RP8"]


def test_stopping_a_pod_whose_checkpoints_are_only_on_its_disk_says_it_pulls_first(write_job: Write) -> None:
    """The stop pulls and verifies the newest checkpoint itself (gpujob.apply.stop_pull): the plan says
    so, with why the last pull is not enough, and that the stop is refused when it does not come home."""
    text = DISK_JOB.replace("state: running", "state: stopped")
    running = pod(volume_gb=50, started_at=ago(3))
    (f,) = stop_findings_of(plan_for(write_job, live(running), text))
    assert (
        f.severity == "info" and "before this stop, the checkpoints (/workspace/ckpt) are pulled" in f.summary
    )
    assert "no pull on record" in f.summary and "refused if it does not come home" in f.summary
    assert "network_volume" in f.fix and "twice the running rate (RP4)" in f.detail
    assert f.action_id == "job.pod.stop" and f.source is not None and f.source.key == "checkpoint.dir"
    # pulled since its start, the run still going: the same note, saying the run writes after that pull
    pulled = {"job": record(running.id, at=ago(1))}
    alive = run_fact(resource_id=running.id, last_checkpoint="s.pt", last_checkpoint_age_s=5)
    (note,) = stop_findings_of(plan_for(write_job, live(running, runs=alive), text, pulls=pulled))
    assert note.severity == "info" and "taken while the run could still write" in note.summary
    # the run had exited when read: that pull holds everything
    done = run_fact(state="exited", exit_code=0, resource_id=running.id)
    assert stop_findings_of(plan_for(write_job, live(running, runs=done), text, pulls=pulled)) == []


def test_a_pull_the_stop_took_after_the_run_stopped_holds_everything(write_job: Write) -> None:
    """A stopped pod whose last pull is the stop's own (before_stop: after the quiesce) is not said to
    hold un-pulled checkpoints, though no run finished before the pull."""
    text = DISK_JOB.replace("state: running", "state: stopped")
    parked = pod(status="stopped", volume_gb=50, started_at=ago(3))
    late = record(parked.id, at=ago(1))
    assert [f.code for f in coded(plan_for(write_job, live(parked), text, pulls={"job": late}), "RP8")] == [
        "RP8"
    ]
    ours = late.model_copy(update={"before_stop": True})
    assert coded(plan_for(write_job, live(parked), text, pulls={"job": ours}), "RP8") == []
    # a run launched after that pull (and the pod stopped by something else since): not current any more
    relaunched = pod(
        status="stopped",
        volume_gb=50,
        started_at=ago(3),
        attributes={"run_launched_at": ago(0.5).isoformat()},
    )
    (f,) = coded(plan_for(write_job, live(relaunched), text, pulls={"job": ours}), "RP8")
    assert "taken while the run could still write" in f.summary


def test_stopping_a_pod_on_a_network_volume_says_nothing_of_rp8(write_job: Write) -> None:
    plan = plan_for(write_job, live(pod(**NV), volume()), **{"state:__running": "state: stopped"})
    assert stop_findings_of(plan) == []


def test_a_stopped_pod_without_a_volume_disk_is_not_said_to_bill_while_stopped(write_job: Write) -> None:
    """Only a network volume (a sweep's queue pods, the starter job): a stopped pod bills nothing, so
    'bills $0.00/mo at the stopped rate' under 'not a cheap park' was a contradiction; the GPU taken
    meanwhile is the trap left."""
    plan = plan_for(write_job, live(volume()), RUNPOD_JOB + "teardown: {on_finish: stop}\n")
    (f,) = coded(plan, "RP4")
    assert "bills nothing stopped" in f.summary and "$0.00" not in f.summary + f.detail, f
    assert "zero GPUs (RP1)" in f.detail
    disk = plan_for(
        write_job,
        live(),
        RUNPOD_JOB.replace("  network_volume: {name: ckpts, size_gb: 100}", "  volume_gb: 50")
        + "teardown: {on_finish: stop}\n",
    )
    (g,) = coded(disk, "RP4")
    assert "$10.00/mo at the stopped rate" in g.summary, g
