"""Planner semantics: actions per desired state, apply order, ids, replacement culprits, ownership, drift."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from gpujob.live import LiveResource
from gpujob.naming import claims
from gpujob.plan import planner as planner_mod
from gpujob.plan.diff import diff_fields
from gpujob.plan.model import GATED, ActionKind
from gpujob.plan.planner import build_plan
from gpujob.profile import load_profile
from tests.owners import PROJECT, machine
from tests.owners import volume as owned_volume
from tests.plan.plan_helpers import H100, NOW, RUNPOD_JOB, ago, live, pod, volume

K = ActionKind
Write = Callable[..., object]


def kinds(plan) -> list[tuple[str, str]]:  # type: ignore[no-untyped-def]
    return [(a.resource_kind, a.kind.value) for a in plan.all_actions()]


def plan_for(write_job: Write, state, text: str = RUNPOD_JOB, env=None, **kw):  # type: ignore[no-untyped-def]
    loaded = write_job(text, **kw)
    return build_plan([loaded], state, now=NOW, env=env or {}, pull_records=None)


def test_fresh_job_creates_volume_then_pod_then_launches(write_job: Write) -> None:
    plan = plan_for(write_job, live())
    assert kinds(plan) == [("network_volume", "create"), ("pod", "create"), ("run", "launch")]
    nv, pod_, run = plan.all_actions()
    assert pod_.depends_on == [nv.id] and run.depends_on == [pod_.id]
    assert [a.id for a in plan.all_actions()] == [
        "job.network_volume.create",
        "job.pod.create",
        "job.run.launch",
    ]
    assert plan.has_changes and not plan.blocked


def test_matching_live_state_is_a_noop(write_job: Write) -> None:
    plan = plan_for(write_job, live(pod(network_volume_id="nv-gpujob-job-ckpts"), volume()))
    assert kinds(plan) == [("pod", "no-op")]
    assert not plan.has_changes
    job = plan.jobs[0]
    assert job.current_usd_per_hour == job.after_usd_per_hour == job.running_usd_per_hour > 0


def test_stopped_pod_is_started_as_drift_with_rp1(write_job: Write) -> None:
    plan = plan_for(
        write_job,
        live(pod(status="stopped", raw_status="EXITED", network_volume_id="nv-gpujob-job-ckpts"), volume()),
    )
    start = plan.all_actions()[0]
    assert start.kind is K.START and start.drift and "EXITED" in start.reasons[0]
    assert [f.code for f in start.findings] == ["RP1"]
    assert plan.all_actions()[1].kind is K.LAUNCH


def test_desired_stopped_stops_and_keeps_the_volume_billing(write_job: Write) -> None:
    plan = plan_for(
        write_job,
        live(pod(volume_gb=100, network_volume_id="nv-gpujob-job-ckpts"), volume()),
        **{"state:__running": "state: stopped"},
    )
    (stop,) = plan.all_actions()
    assert stop.kind is K.STOP and not stop.gated
    assert any(
        m.what == "volume disk 100 GB (stopped, 2×)" and m.usd_per_month == 20.0 for m in stop.billing.keeps
    )
    assert stop.data.wipes == ["container disk"] and stop.data.checkpoint_safe is True
    assert "RP4" in [f.code for f in plan.jobs[0].findings]


def test_absent_pulls_before_anything_deletes_checkpoints(write_job: Write) -> None:
    plan = plan_for(
        write_job,
        live(pod(network_volume_id="nv-gpujob-job-ckpts"), volume()),
        **{"state:__running": "state: absent"},
    )
    actions = plan.all_actions()
    assert [a.kind for a in actions] == [K.PULL, K.TERMINATE, K.DELETE_VOLUME]
    pull, term, dele = actions
    assert pull.id in term.depends_on and pull.id in dele.depends_on and term.id in dele.depends_on
    assert term.gated and dele.gated and not pull.gated
    assert dele.data.irreversible and dele.data.checkpoint_safe is False
    assert plan.jobs[0].after_usd_per_hour == 0.0


def test_gpu_change_forces_replacement_naming_the_field(write_job: Write) -> None:
    plan = plan_for(write_job, live(pod(gpu_id=H100, network_volume_id="nv-gpujob-job-ckpts"), volume()))
    replace = next(a for a in plan.all_actions() if a.kind is K.REPLACE)
    assert replace.gated and "gpu" in replace.reasons[0]
    (change,) = replace.changes
    assert (change.path, change.before, change.after, change.forces_replacement) == (
        "gpu",
        "H100-80GB",
        "A100-80GB",
        True,
    )
    # checkpoints are on the network volume, which survives: no pull needed before this replace
    assert K.PULL not in [a.kind for a in plan.all_actions()]


def test_attaching_a_network_volume_replaces_the_pod_after_a_pull(write_job: Write) -> None:
    plan = plan_for(write_job, live(pod(volume_gb=20)))
    assert [a.kind for a in plan.all_actions()] == [K.CREATE, K.PULL, K.REPLACE, K.PUSH, K.LAUNCH]
    replace, push, launch = plan.all_actions()[2:]
    assert any(c.path == "network_volume" and c.forces_replacement for c in replace.changes)
    assert "RP7" in [f.code for f in replace.findings]
    assert set(replace.depends_on) == {"job.checkpoints.pull", "job.network_volume.create"}
    # the checkpoints are on the old pod's volume disk (not on the new volume yet): carried across
    assert replace.data.checkpoint_safe is False and "LOST unless pulled" in replace.data.summary
    assert push.depends_on == [replace.id] and launch.depends_on == [push.id]
    assert any("final pull" in r for r in replace.reasons)


def test_volume_growth_is_in_place(write_job: Write) -> None:
    plan = plan_for(write_job, live(pod(network_volume_id="nv-gpujob-job-ckpts"), volume(volume_gb=50)))
    (grow,) = plan.all_actions()
    assert grow.kind is K.UPDATE and not grow.gated
    assert grow.changes[0].forces_replacement is False and (
        grow.changes[0].before,
        grow.changes[0].after,
    ) == (50, 100)


def test_volume_grown_outside_gpujob_is_drift_not_an_action(write_job: Write) -> None:
    plan = plan_for(write_job, live(pod(network_volume_id="nv-gpujob-job-ckpts"), volume(volume_gb=300)))
    assert kinds(plan) == [("pod", "no-op")]
    assert [f.code for f in plan.jobs[0].findings if f.code == "drift"] == ["drift"]


def test_deleted_pod_with_surviving_volume_is_drift(write_job: Write) -> None:
    plan = plan_for(write_job, live(volume()))
    create = plan.all_actions()[0]
    assert create.kind is K.CREATE and create.resource_kind == "pod" and create.drift
    assert "outside gpujob" in create.reasons[0]


def test_duplicate_pods_are_an_error(write_job: Write) -> None:
    state = live(pod(id="p1", created_at=ago(2)), pod(id="p2", created_at=ago(1)), volume())
    plan = plan_for(write_job, state)
    dup = [f for f in plan.all_findings() if f.code == "duplicate"]
    assert len(dup) == 1 and dup[0].severity == "error" and "p1, p2" in dup[0].summary
    assert plan.blocked
    assert dup[0].source is not None and dup[0].source.line == 2  # name: job


def test_read_errors_block_the_plan(write_job: Write) -> None:
    plan = plan_for(write_job, live(read_errors=["runpod: list resources failed: HTTP 503"]))
    assert plan.blocked and any(f.code == "live-read" for f in plan.all_findings())


def test_names_of_overlapping_jobs_never_collide_and_each_job_owns_only_its_own() -> None:
    # Job bert + volume large-ckpts vs job bert-large + volume ckpts: one name under the old scheme.
    assert owned_volume("bert", "large-ckpts") != owned_volume("bert-large", "ckpts")
    res = [
        pod(machine("bert")),
        pod(machine("bert-large")),
        volume(owned_volume("bert", "large-ckpts")),
        volume(owned_volume("bert-large", "ckpts")),
        pod(machine("other")),
        pod(machine("bert", "otherprj")),  # the same job name in another checkout
    ]
    owners = claims(res, {"bert": PROJECT, "bert-large": PROJECT})
    assert [r.name for r in owners["bert"]] == [machine("bert"), owned_volume("bert", "large-ckpts")]
    assert [r.name for r in owners["bert-large"]] == [
        machine("bert-large"),
        owned_volume("bert-large", "ckpts"),
    ]


def test_a_pod_whose_env_marker_disagrees_with_its_name_is_nobodys() -> None:
    forged = pod(machine("bert"), attributes={"project": "otherprj"})
    unmarked = pod(machine("bert"), attributes={"project": None})
    assert claims([forged, unmarked], {"bert": PROJECT})["bert"] == []


def test_snapshots_follow_their_machine() -> None:
    m = LiveResource(platform="paperspace", kind="machine", id="m1", name=machine("seg"), status="running")
    snap = LiveResource(
        platform="paperspace", kind="snapshot", id="s1", name="nightly", status="available", machine_id="m1"
    )
    assert claims([m, snap], {"seg": PROJECT})["seg"] == [m, snap]


def test_another_checkouts_running_pod_blocks_a_second_copy_and_names_its_owner(write_job: Write) -> None:
    theirs = pod(
        machine("job", "otherprj"), attributes={"project": "otherprj", "owner": "ann@box:/src/.gpujob"}
    )
    plan = plan_for(write_job, live(theirs))
    (f,) = [f for f in plan.all_findings() if f.code == "owner"]
    assert f.severity == "error" and plan.blocked
    assert "otherprj" in f.summary and "ann@box:/src/.gpujob" in f.summary and theirs.id in f.summary
    assert all(a.resource_id != theirs.id for a in plan.all_actions())
    stopped = plan_for(write_job, live(theirs.model_copy(update={"status": "stopped"})))
    (w,) = [f for f in stopped.all_findings() if f.code == "owner"]
    assert w.severity == "warning" and not stopped.blocked
    gone = plan_for(write_job, live(theirs), **{"state:__running": "state: absent"})
    assert not gone.blocked and all(a.resource_id != theirs.id for a in gone.all_actions())


def test_plan_is_deterministic_and_ids_unique(write_job: Write) -> None:
    loaded = write_job(RUNPOD_JOB.replace("state: running", "state: absent"))
    state = live(pod(network_volume_id="nv-gpujob-job-ckpts"), volume())
    a = build_plan([loaded], state, now=NOW, env={})
    b = build_plan([loaded], state, now=NOW, env={})
    assert a == b
    ids = [x.id for x in a.all_actions()]
    assert len(ids) == len(set(ids))
    assert all(x.gated == (x.kind in GATED) for x in a.all_actions())
    assert a.live_fingerprint == state.fingerprint() and len(a.spec_digest) == 64


def test_secret_values_never_reach_the_plan(write_job: Write) -> None:
    text = RUNPOD_JOB.replace(
        "command: python train.py", "command: python train.py\n  secrets: [HF_TOKEN, WANDB_API_KEY]"
    )
    canary = "CANARY-secret-value-123"
    plan = plan_for(write_job, live(), text=text, env={"HF_TOKEN": canary})
    assert canary not in plan.model_dump_json()
    (missing,) = [f for f in plan.all_findings() if f.code == "secrets"]
    assert (
        missing.severity == "error"
        and "WANDB_API_KEY" in missing.summary
        and "HF_TOKEN" not in missing.summary
    )


def test_network_volume_in_a_data_center_without_the_gpu(
    write_job: Write, monkeypatch: pytest.MonkeyPatch
) -> None:
    rp = load_profile("runpod")
    gpus = [g.model_copy(update={"regions": ["US-TX-3"]}) if g.alias == "A100-80GB" else g for g in rp.gpus]
    patched = rp.model_copy(update={"gpus": gpus})
    monkeypatch.setattr(planner_mod, "load_profile", lambda platform: patched)
    plan = plan_for(write_job, live())
    rp7 = [f for f in plan.all_findings() if f.code == "RP7" and f.severity == "error"]
    assert rp7 and "EU-RO-1" in rp7[0].summary


def test_concurrent_writer_on_the_volume(write_job: Write) -> None:
    other = pod("notebook", network_volume_id="nv-gpujob-job-ckpts")
    plan = plan_for(write_job, live(pod(network_volume_id="nv-gpujob-job-ckpts"), volume(), other))
    (f,) = [f for f in plan.all_findings() if f.code == "concurrent-writers"]
    assert f.severity == "error" and "notebook" in f.summary


def test_diff_allowlist() -> None:
    changes = diff_fields(
        {"gpu": "A", "volume_gb": 50, "name": "x"}, {"gpu": "A", "volume_gb": 100, "name": "y"}
    )
    assert [(c.path, c.forces_replacement) for c in changes] == [("volume_gb", False), ("name", False)]
    shrink = diff_fields({"volume_gb": 100}, {"volume_gb": 50})
    assert shrink[0].forces_replacement is True
    assert diff_fields({"region": "A"}, {"region": "B"})[0].forces_replacement is True
    assert diff_fields({"a": 1}, {"a": 1}) == []


def test_a_volume_the_spec_stopped_naming_is_reported_not_deleted(write_job: Write) -> None:
    old = volume(owned_volume("job", "oldname"), volume_gb=50)
    plan = plan_for(write_job, live(pod(network_volume_id="nv-gpujob-job-ckpts"), volume(), old))
    assert K.DELETE_VOLUME not in [a.kind for a in plan.all_actions()]
    (f,) = [f for f in plan.all_findings() if f.code == "orphan"]
    assert owned_volume("job", "oldname") in f.summary and "$3.50/mo" in f.summary
    absent = plan_for(write_job, live(pod(), volume(), old), **{"state:__running": "state: absent"})
    deleted = [a.resource_name for a in absent.all_actions() if a.kind is K.DELETE_VOLUME]
    assert deleted == [owned_volume("job", "ckpts"), owned_volume("job", "oldname")]


def test_live_fingerprint_ignores_unrelated_resources_but_not_ours(write_job: Write) -> None:
    from gpujob.plan.planner import live_fingerprint

    ours = [pod(network_volume_id="nv-gpujob-job-ckpts"), volume()]
    base = live_fingerprint(live(*ours, pod("someone-else")), {"job": PROJECT})
    assert live_fingerprint(live(*ours, pod("someone-else", status="stopped")), {"job": PROJECT}) == base
    assert (
        live_fingerprint(live(ours[0].model_copy(update={"status": "stopped"}), ours[1]), {"job": PROJECT})
        != base
    )
    writer = pod("notebook", network_volume_id="nv-gpujob-job-ckpts")
    assert live_fingerprint(live(*ours, writer), {"job": PROJECT}) != base  # a pod on our volume matters
    plan = plan_for(write_job, live(*ours, pod("someone-else")))
    assert plan.live_fingerprint == base


def test_resources_named_by_a_gpujob_without_project_markers_are_pointed_out_not_adopted(
    write_job: Write,
) -> None:
    legacy = [pod("gpujob-job", attributes={}), volume("gpujob-job-ckpts")]
    plan = plan_for(write_job, live(*legacy))
    assert [a.kind for a in plan.all_actions()][:2] == [K.CREATE, K.CREATE]  # not adopted
    assert all(a.resource_id not in {r.id for r in legacy} for a in plan.all_actions())
    (f,) = [f for f in plan.all_findings() if f.code == "owner"]
    assert f.severity == "warning" and "gpujob-job " in f.summary and "gpujob-job-ckpts" in f.summary


def test_when_ours_runs_too_another_checkouts_pod_is_only_a_warning(write_job: Write) -> None:
    theirs = pod(machine("job", "otherprj"), attributes={"project": "otherprj"})
    plan = plan_for(write_job, live(pod(network_volume_id="nv-gpujob-job-ckpts"), volume(), theirs))
    (f,) = [f for f in plan.all_findings() if f.code == "owner"]
    assert f.severity == "warning" and theirs.name in f.summary and not plan.blocked


def test_our_pods_owner_marker_old_or_new_is_never_a_change(write_job: Write) -> None:
    from gpujob import naming

    plans = [
        plan_for(write_job, live(pod(attributes={"owner": owner})))
        for owner in ("me@laptop:/src/.gpujob", naming.owner_marker("me@laptop:/src/.gpujob"), None)
    ]
    shapes = [[(a.kind, a.resource_id, a.changes) for a in p.all_actions()] for p in plans]
    assert shapes[0] == shapes[1] == shapes[2]  # the marker's form changes nothing the plan does
    assert not any(f.code == "owner" for p in plans for f in p.all_findings())
