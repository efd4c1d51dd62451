"""The run as a resource in the plan: a relaunch from the launch record, a note when there is none,
and the push that seeds a machine created on a fresh disk."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

from gpujob.live import RunFact
from gpujob.plan.model import ActionKind
from gpujob.plan.planner import build_plan
from gpujob.plan.records import LaunchRecord, PulledFile, PullRecord, run_record_of
from gpujob.render import render_plan
from tests.plan.plan_helpers import NOW, RUNPOD_JOB, live, pod, volume

K = ActionKind
Write = Callable[..., object]
VOL = dict(network_volume_id="nv-gpujob-job-ckpts")
FACT = RunFact(state="running", last_checkpoint="step-400.pt", last_checkpoint_age_s=300)


def _plan(write_job: Write, text: str, record: object = None, fact: RunFact | None = FACT, **kw: object):  # type: ignore[no-untyped-def]
    loaded = write_job(text)
    p = pod(**VOL)
    launched = (
        None
        if record is None
        else LaunchRecord(job="job", platform="runpod", resource_id=p.id, run=record, at=NOW)  # type: ignore[arg-type]
    )
    state = live(p, volume(), runs={"job": fact} if fact else {})
    return build_plan([loaded], state, now=NOW, env={}, launch_records={"job": launched}, **kw), loaded  # type: ignore[arg-type]


def test_the_same_run_plans_nothing(write_job: Write) -> None:
    loaded = write_job(RUNPOD_JOB)
    plan, _ = _plan(write_job, RUNPOD_JOB, run_record_of(loaded.spec, NOW))  # type: ignore[attr-defined]
    assert not plan.has_changes


def test_an_env_change_is_a_relaunch_naming_the_key_and_its_new_value(write_job: Write) -> None:
    before = run_record_of(write_job(RUNPOD_JOB).spec, NOW)  # type: ignore[attr-defined]
    text = RUNPOD_JOB + '  env: {LR: "0.1"}\n'
    plan, _ = _plan(write_job, text, before)
    (a,) = [a for a in plan.all_actions() if a.kind is not K.NOOP]
    assert a.kind is K.RELAUNCH and a.id == "job.run.relaunch"
    assert [(c.path, c.before, c.after) for c in a.changes] == [("run.env.LR", None, "0.1")]
    assert any("work at risk: up to 5 min" in r for r in a.reasons)
    text_out = render_plan(plan, "text")
    assert "~ relaunch run job" in text_out and "run.env.LR" in text_out
    assert "relaunch" in render_plan(plan, "markdown") and '"relaunch"' in render_plan(plan, "json")


def test_interval_and_keep_are_part_of_the_run(write_job: Write) -> None:
    before = run_record_of(write_job(RUNPOD_JOB).spec, NOW)  # type: ignore[attr-defined]
    text = RUNPOD_JOB.replace("interval: 30m", "interval: 10m\n  keep: 5")
    plan, _ = _plan(write_job, text, before)
    (a,) = [a for a in plan.all_actions() if a.kind is not K.NOOP]
    assert {c.path for c in a.changes} == {"checkpoint.interval", "checkpoint.keep"}


def test_a_secret_change_shows_names_only(write_job: Write) -> None:
    before = run_record_of(write_job(RUNPOD_JOB).spec, NOW)  # type: ignore[attr-defined]
    plan, _ = _plan(write_job, RUNPOD_JOB + "  secrets: [HF_TOKEN]\n", before)
    (a,) = [a for a in plan.all_actions() if a.kind is not K.NOOP]
    assert [(c.path, c.before, c.after) for c in a.changes] == [("run.secrets", [], ["HF_TOKEN"])]


def test_a_run_without_a_launch_record_is_never_a_relaunch_and_a_note_says_so(write_job: Write) -> None:
    plan, _ = _plan(write_job, RUNPOD_JOB + '  env: {LR: "0.1"}\n', None)
    assert not plan.has_changes
    assert any(f.code == "run-unrecorded" for f in plan.all_findings())


def _record(tmp: Path, names: list[str]) -> PullRecord:
    local = tmp / "checkpoints"
    local.mkdir(exist_ok=True)
    files = []
    for n in names:
        (local / n).write_text(n)
        files.append(
            PulledFile(name=n, size=len(n), sha256="x", verified=True, at=NOW, local_path=str(local / n))
        )
    return PullRecord(job="job", platform="runpod", resource_id="gone", remote_dir="/workspace/ckpt",
                      local_dir=str(local), files=files, at=NOW - timedelta(hours=1))  # fmt: skip


def test_a_machine_created_on_a_fresh_disk_gets_the_newest_verified_checkpoint(
    write_job: Write, tmp_path: Path
) -> None:
    loaded = write_job(RUNPOD_JOB)
    rec = _record(tmp_path, ["step_9.pt", "step_10.pt"])
    plan = build_plan([loaded], live(), now=NOW, env={}, pull_records={"job": rec})  # type: ignore[list-item]
    kinds = [a.id for a in plan.all_actions()]
    assert kinds == ["job.network_volume.create", "job.pod.create", "job.checkpoints.push", "job.run.launch"]
    push = next(a for a in plan.all_actions() if a.kind is K.PUSH)
    assert "step_10.pt (10 B)" in push.reasons[0]
    fresh = build_plan([loaded], live(), now=NOW, env={}, pull_records={"job": rec}, fresh=True)  # type: ignore[list-item]
    assert all(a.kind is not K.PUSH for a in fresh.all_actions())


def test_no_seed_when_the_volume_kept_the_checkpoints(write_job: Write, tmp_path: Path) -> None:
    loaded = write_job(RUNPOD_JOB)
    rec = _record(tmp_path, ["step_9.pt"])
    plan = build_plan([loaded], live(volume()), now=NOW, env={}, pull_records={"job": rec})  # type: ignore[list-item]
    assert [a.kind for a in plan.all_actions()] == [K.CREATE, K.LAUNCH]


def test_replace_run_relaunches_an_unchanged_run_and_replace_pod_recreates_the_pod(write_job: Write) -> None:
    loaded = write_job(RUNPOD_JOB)
    same = run_record_of(loaded.spec, NOW)  # type: ignore[attr-defined]
    plan, _ = _plan(write_job, RUNPOD_JOB, same, replace=["job.run"])
    (a,) = [a for a in plan.all_actions() if a.kind is not K.NOOP]
    assert a.kind is K.RELAUNCH and a.changes == [] and "asked for" in a.reasons[0]
    assert plan.replace == ["job.run"]
    plan, _ = _plan(write_job, RUNPOD_JOB, same, replace=["job.pod"])
    rep = next(a for a in plan.all_actions() if a.kind is K.REPLACE)
    assert rep.gated and "asked for: --replace job.pod" in rep.reasons[0]
    # Without a record, --replace job.run still relaunches (it is how such a run gets one).
    plan, _ = _plan(write_job, RUNPOD_JOB, None, replace=["job.run"])
    assert [a.kind for a in plan.all_actions() if a.kind is not K.NOOP] == [K.RELAUNCH]


def test_an_unknown_replace_address_is_refused_naming_the_known_ones(write_job: Write) -> None:
    import pytest

    from gpujob.errors import GpujobError
    from gpujob.plan.replace import check_addresses

    loaded = write_job(RUNPOD_JOB)
    assert check_addresses(["job.run", "job.run", "job.pod"], [loaded]) == ["job.run", "job.pod"]
    with pytest.raises(
        GpujobError, match=r"--replace job.machine: no such address .*known: job.run, job.pod"
    ):
        check_addresses(["job.machine"], [loaded])


def test_checkpoint_stale_judges_the_run_by_the_interval_it_was_launched_with(write_job: Write) -> None:
    launched = run_record_of(write_job(RUNPOD_JOB).spec, NOW)  # type: ignore[attr-defined]  # interval 30m
    edited = RUNPOD_JOB.replace("interval: 30m", "interval: 1m")
    fact = RunFact(
        state="running", started_at="2026-01-01T00:00:00Z", last_checkpoint="s.pt", last_checkpoint_age_s=600
    )
    plan, _ = _plan(write_job, edited, launched, fact)
    assert all(f.code != "checkpoint-stale" for f in plan.all_findings())  # 10 min < 2 × 30 min
    assert any(a.kind is K.RELAUNCH for a in plan.all_actions())  # and the new interval is a relaunch
    plan, _ = _plan(write_job, edited, None, fact)
    assert any(f.code == "checkpoint-stale" for f in plan.all_findings())  # no record: the file's 1m


def test_a_stop_of_a_run_without_a_recent_checkpoint_says_the_work_at_risk(write_job: Write) -> None:
    text = RUNPOD_JOB.replace("state: running", "state: stopped")
    stale = RunFact(state="running", last_checkpoint="s.pt", last_checkpoint_age_s=3 * 3600)
    plan, _ = _plan(write_job, text, None, stale)
    stop = next(a for a in plan.all_actions() if a.kind is K.STOP)
    (f,) = [f for f in stop.findings if f.code == "work-at-risk"]
    assert "the newest checkpoint is 180 min old" in f.summary and "SIGTERM" in f.summary
    recent = RunFact(state="running", last_checkpoint="s.pt", last_checkpoint_age_s=60)
    plan, _ = _plan(write_job, text, None, recent)
    stop = next(a for a in plan.all_actions() if a.kind is K.STOP)
    assert all(f.code != "work-at-risk" for f in stop.findings)
