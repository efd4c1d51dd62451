from __future__ import annotations

import asyncio

import pytest

from gpujob.apply import machine_steps, stepbase, volume_steps
from gpujob.apply.applier import apply_plan
from gpujob.apply.journal import Journal
from gpujob.apply.progress import RecordingHooks
from gpujob.errors import GateError, GpujobError
from gpujob.plan.model import ActionKind
from gpujob.plan.records import load_pull_record
from tests.apply.fakes import FakeClock, FakeLoaded, FakeProvider, FakeSSH, action, make_plan, make_spec
from tests.owners import machine, pin_project
from tests.owners import volume as owned_volume

CANARY = "hf_CANARY_7f3a9c"


def create_plan(job="toy"):
    return make_plan(
        (
            job,
            [
                action(job, ActionKind.CREATE, "network_volume"),
                action(job, ActionKind.CREATE),
                action(job, ActionKind.LAUNCH),
            ],
        )
    )


def destroy_plan(prov, job="toy"):
    pod = next(r for r in prov.resources.values() if r.kind == "pod")
    vol = next(r for r in prov.resources.values() if r.kind == "network_volume")
    return make_plan(
        (
            job,
            [
                action(job, ActionKind.PULL, resource_id=pod.id),
                action(job, ActionKind.TERMINATE, resource_id=pod.id),
                action(job, ActionKind.DELETE_VOLUME, "network_volume", resource_id=vol.id),
            ],
        )
    )


class World:
    def __init__(self, tmp_path, **spec_over):
        self.tmp = tmp_path
        self.spec = make_spec(**spec_over)
        (tmp_path / "job.yaml").write_text("x")
        self.loaded = [FakeLoaded(self.spec, tmp_path / "job.yaml")]
        self.prov = FakeProvider()
        self.ssh = FakeSSH(tmp_path)
        self.clock = FakeClock()
        self.hooks = RecordingHooks()
        self.state = tmp_path / ".gpujob"
        pin_project(self.state)

    def apply(self, plan, approvals=()):
        return asyncio.run(
            apply_plan(
                plan,
                self.loaded,
                {"runpod": self.prov},
                approvals=set(approvals),
                auto_approve=True,
                hooks=self.hooks,
                clock=self.clock,
                env={"HF_TOKEN": CANARY},
                ssh=self.ssh.api(),
                state_dir=self.state,
            )
        )


def test_create_launch_and_journal(tmp_path):
    w = World(tmp_path)
    res = w.apply(create_plan())
    assert res.ok, res.failed
    assert res.done == ["toy.network_volume.create", "toy.pod.create", "toy.pod.launch"]
    req = w.prov.last_request
    vol = next(r for r in w.prov.resources.values() if r.kind == "network_volume")
    assert req.network_volume_id == vol.id and req.ssh_public_key.startswith("ssh-ed25519")
    assert req.gpu_id == "NVIDIA GeForce RTX 4090" and req.region == "EU-RO-1" and req.spot
    assert w.ssh.launches == [{"HF_TOKEN": CANARY}]
    assert w.ssh.connects[0][1]["expect_new_host"] is True  # freshly created: pin its key anew
    journal = Journal(w.state, "toy")
    phases = [(e.action_id, e.phase) for e in journal.entries() if e.action_id]
    assert phases == [(a, p) for a in res.done for p in ("intent", "done")]
    assert journal.in_flight() == {}
    assert CANARY.encode() not in b"".join(journal.store.lines(journal.name))


def test_rerun_adopts_instead_of_duplicating(tmp_path):
    w = World(tmp_path)
    w.apply(create_plan())
    res = w.apply(create_plan())  # e.g. the first apply was killed before recording its outcome
    assert res.ok
    assert w.prov.creates == {owned_volume("toy", "ckpts"): 1, machine("toy"): 1}
    assert any(f"adopted existing {machine('toy')} " in e[2] for e in w.hooks.events)
    assert len(w.ssh.launches) == 1  # the run was alive: not relaunched


def test_in_flight_create_is_looked_up_again_before_creating(tmp_path):
    w = World(tmp_path)
    journal = Journal(w.state, "toy")
    journal.append("intent", w.clock.now(), action_id="toy.network_volume.create", kind="create")
    res = w.apply(create_plan())
    assert res.ok
    assert w.clock.slept.count(3.0) == stepbase.ABSENCE_READS  # absence needed several reads
    assert w.prov.creates[owned_volume("toy", "ckpts")] == 1


def test_capacity_falls_back_to_next_candidate(tmp_path):
    w = World(tmp_path)
    w.prov.no_capacity = {"NVIDIA GeForce RTX 4090"}
    res = w.apply(create_plan())
    assert res.ok
    assert w.prov.last_request.gpu_id == "NVIDIA RTX A6000"
    assert any("no capacity for 1× RTX4090" in e[2] for e in w.hooks.events)


def test_capacity_waits_with_backoff_then_gives_up(tmp_path, monkeypatch):
    monkeypatch.setattr(machine_steps, "CAPACITY_WAIT_S", 100.0)
    w = World(tmp_path)
    w.prov.no_capacity = {"NVIDIA GeForce RTX 4090", "NVIDIA RTX A6000"}
    res = w.apply(create_plan())
    assert "toy.pod.create" in res.failed and "no capacity on any of 2" in res.failed["toy.pod.create"]
    assert res.skipped == ["toy.pod.launch"]
    assert w.clock.slept == [15.0, 30.0]  # doubling backoff through the injected clock
    assert any("waiting 15s for capacity" in e[2] for e in w.hooks.events)
    assert w.prov.creates[machine("toy")] == 0


def test_missing_secret_fails_before_any_call(tmp_path):
    w = World(tmp_path)
    with pytest.raises(GpujobError, match="HF_TOKEN"):
        asyncio.run(
            apply_plan(
                create_plan(),
                w.loaded,
                {"runpod": w.prov},
                approvals=set(),
                auto_approve=True,
                env={},
                ssh=w.ssh.api(),
                state_dir=w.state,
            )
        )
    assert w.prov.calls == []


def test_destroy_refuses_without_approval_before_touching_anything(tmp_path):
    w = World(tmp_path)
    w.apply(create_plan())
    calls = list(w.prov.calls)
    with pytest.raises(GateError, match="need explicit approval"):
        w.apply(destroy_plan(w.prov))
    assert w.prov.calls == calls and w.ssh.commands == []


def test_destroy_refuses_when_a_pulled_checkpoint_fails_verification(tmp_path):
    w = World(tmp_path)
    w.apply(create_plan())
    w.ssh.remote_files = {"step_5.ckpt": b"five", "step_10.ckpt": b"ten"}
    w.ssh.corrupt = {"step_10.ckpt"}
    res = w.apply(destroy_plan(w.prov), approvals={"toy.pod.terminate", "toy.network_volume.delete-volume"})
    assert "pull incomplete" in res.failed["toy.pod.pull"]
    assert "step_10.ckpt" in res.failed["toy.pod.pull"]
    assert res.skipped == ["toy.pod.terminate", "toy.network_volume.delete-volume"]
    assert {r.kind for r in w.prov.resources.values()} == {"pod", "network_volume"}


def test_destroy_with_pull_verify_and_approval_removes_everything(tmp_path):
    w = World(tmp_path)
    w.apply(create_plan())
    w.ssh.remote_files = {"step_5.ckpt": b"five", "sub/step_10.ckpt": b"ten"}
    res = w.apply(destroy_plan(w.prov), approvals={"toy.pod.terminate", "toy.network_volume.delete-volume"})
    assert res.ok, res.failed
    assert w.prov.resources == {}
    rec = load_pull_record(w.state, "toy")
    assert (
        rec is not None
        and rec.complete
        and sorted(f.name for f in rec.files) == ["step_5.ckpt", "sub/step_10.ckpt"]
    )
    assert (tmp_path / "checkpoints" / "sub" / "step_10.ckpt").read_bytes() == b"ten"


def test_volume_delete_waits_for_pod_to_release_it(tmp_path, monkeypatch):
    monkeypatch.setattr(volume_steps, "DETACH_WAIT_S", 10.0)
    w = World(tmp_path)
    w.apply(create_plan())
    w.ssh.remote_files = {"a.ckpt": b"a"}
    plan = destroy_plan(w.prov)
    only_delete = plan.model_copy(
        update={
            "jobs": [
                plan.jobs[0].model_copy(
                    update={"actions": [plan.jobs[0].actions[0], plan.jobs[0].actions[2]]}
                )
            ]
        }
    )
    res = w.apply(only_delete, approvals={"toy.network_volume.delete-volume"})
    assert f"still attached to {machine('toy')}" in res.failed["toy.network_volume.delete-volume"]
    assert any(r.kind == "network_volume" for r in w.prov.resources.values())


def test_stop_then_start_relaunches_on_new_endpoint(tmp_path):
    w = World(tmp_path)
    w.apply(create_plan())
    pod = next(r for r in w.prov.resources.values() if r.kind == "pod")
    w.apply(make_plan(("toy", [action("toy", ActionKind.STOP, resource_id=pod.id)])))
    w.ssh.alive = False  # the stop killed the run
    res = w.apply(
        make_plan(
            ("toy", [action("toy", ActionKind.START, resource_id=pod.id), action("toy", ActionKind.LAUNCH)])
        )
    )
    assert res.ok
    first, last = w.ssh.connects[0][0], w.ssh.connects[-1][0]
    assert first.port != last.port  # endpoint re-resolved after the start
    assert w.ssh.connects[-1][1]["expect_new_host"] is True
    assert len(w.ssh.launches) == 2


def test_two_jobs_run_concurrently_and_one_failure_does_not_stop_the_other(tmp_path, monkeypatch):
    monkeypatch.setattr(machine_steps, "CAPACITY_WAIT_S", 1.0)
    w = World(tmp_path)
    w.loaded.append(FakeLoaded(make_spec(name="other"), tmp_path / "job.yaml"))
    w.prov.no_capacity = {"NVIDIA GeForce RTX 4090", "NVIDIA RTX A6000"}
    plan = make_plan(
        ("toy", list(create_plan("toy").jobs[0].actions)), ("other", create_plan("other").jobs[0].actions[:1])
    )
    res = w.apply(plan)
    assert "toy.pod.create" in res.failed
    assert "other.network_volume.create" in res.done
    assert w.prov.creates[owned_volume("other", "ckpts")] == 1


def test_launch_reconnects_when_the_connection_drops_mid_sync(tmp_path):
    from gpujob.errors import SSHConnectError

    w = World(tmp_path)
    real_sync = w.ssh.sync_tree
    drops = {"left": 1}

    async def flaky_sync(remote, src, dest, exclude, progress=None):
        if drops["left"]:
            drops["left"] -= 1
            raise SSHConnectError("connection lost during sync")
        return await real_sync(remote, src, dest, exclude, progress)

    w.ssh.sync_tree = flaky_sync  # type: ignore[method-assign]
    res = w.apply(create_plan())
    assert res.ok, res.failed
    assert len(w.ssh.synced) == 1 and len(w.ssh.launches) == 1
    assert any("reconnecting, attempt 2" in e[2] for e in w.hooks.events)
