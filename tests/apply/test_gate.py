"""The teardown gate against fakes: its order (approval, quiesce, look, final pull, relist), what it
refuses and what it lets through. The same rules hold end to end in tests/reliability/test_teardown_gate.py."""

from __future__ import annotations

import asyncio
import hashlib
from datetime import UTC, datetime
from pathlib import Path

import pytest

from gpujob import naming
from gpujob.apply import teardown
from gpujob.apply.context import JobContext
from gpujob.apply.gate import checkpoint_tier, require_approvals, require_approved, unsafe_files
from gpujob.apply.journal import Journal
from gpujob.apply.progress import RecordingHooks
from gpujob.errors import GateError
from gpujob.live import LiveResource, SSHEndpoint
from gpujob.plan.model import ActionKind
from gpujob.plan.records import PulledFile, PullRecord, load_pull_records, save_pull_record
from gpujob.ssh.listing import RemoteFile
from tests.apply.fakes import FakeClock, FakeProvider, FakeSSH, action, make_spec
from tests.owners import PROJECT, machine, marker
from tests.owners import volume as owned_volume

NOW = datetime(2026, 11, 29, tzinfo=UTC)
VOLUME_DISK = {"network_volume": None, "volume_gb": 10}


def world(tmp_path: Path, *, files: dict[str, bytes] | None = None, volume: bool = False, **spec):
    prov = FakeProvider()
    ssh = FakeSSH(tmp_path, remote_files=dict(files or {}), alive=True)
    state = tmp_path / ".gpujob"
    ctx = JobContext(
        spec=make_spec(**spec), spec_path=tmp_path / "job.yaml", provider=prov, state_dir=state,
        journal=Journal(state, "toy"), ssh=ssh.api(), clock=FakeClock(), env={}, hooks=RecordingHooks(),  # type: ignore[arg-type]
        approvals=set(), project=PROJECT,
    )  # fmt: skip
    vol = None
    if volume:
        vol = prov._save(
            LiveResource(platform="runpod", kind="network_volume", id="vol1", name=owned_volume("toy", "ckpts"),
                         status="available", region="EU-RO-1")
        )  # fmt: skip
        ctx.volume = vol
    ctx.machine = prov._save(
        LiveResource(
            platform="runpod", kind="pod", id="pod1", name=machine("toy"), status="running", attributes=marker(),
            network_volume_id=vol.id if vol else None, ssh=SSHEndpoint(host="127.0.0.1", port=40001),
        )
    )  # fmt: skip
    return ctx, prov, ssh


def guard(ctx: JobContext, act) -> str:  # type: ignore[no-untyped-def]
    ctx.approvals.add(act.id)
    return asyncio.run(teardown.guard(ctx, act))


def test_unapproved_action_is_refused_before_the_run_is_touched(tmp_path: Path) -> None:
    ctx, _, ssh = world(tmp_path, files={"s1.ckpt": b"one"}, storage=VOLUME_DISK)
    term = action("toy", ActionKind.TERMINATE, resource_id="pod1")
    with pytest.raises(GateError, match="not approved") as err:
        asyncio.run(teardown.guard(ctx, term))
    assert "--approve toy.pod.terminate" in err.value.render()
    assert ssh.quiesced == [] and ssh.connects == [] and ssh.alive


def test_volume_disk_terminate_quiesces_then_pulls_then_relists(tmp_path: Path) -> None:
    ctx, _, ssh = world(tmp_path, files={"s1.ckpt": b"one", "sub/s2.ckpt": b"two"}, storage=VOLUME_DISK)
    detail = guard(ctx, action("toy", ActionKind.TERMINATE, resource_id="pod1"))
    assert ssh.quiesced and not ssh.alive  # stopped first, with a grace of at least 30 s
    assert ssh.quiesced[0] >= 30
    assert "final pull: 2 checkpoint file(s)" in detail
    assert (tmp_path / "checkpoints" / "sub" / "s2.ckpt").read_bytes() == b"two"
    assert ssh.listed.count("/workspace/ckpt") == 2  # the look, then the listing right before the call


def test_a_file_written_after_the_final_pull_refuses_the_terminate(tmp_path: Path) -> None:
    """The record is evidence; the listing right before the call is the truth."""
    ctx, _, ssh = world(tmp_path, files={"s1.ckpt": b"one"}, storage=VOLUME_DISK)
    pull = ssh.pull_checkpoints

    async def pull_then_something_writes(*a, **k):  # type: ignore[no-untyped-def]
        out = await pull(*a, **k)
        ssh.remote_files["s2.ckpt"] = b"written by a process the quiesce did not know"
        return out

    ssh.pull_checkpoints = pull_then_something_writes  # type: ignore[method-assign]
    ctx.ssh = ssh.api()
    with pytest.raises(GateError, match=r"'s2.ckpt' \(not pulled\)"):
        guard(ctx, action("toy", ActionKind.TERMINATE, resource_id="pod1"))


def test_network_volume_terminate_needs_no_pull_but_a_stopped_run_and_the_dir_on_the_volume(
    tmp_path: Path,
) -> None:
    ctx, _, ssh = world(tmp_path, files={"s1.ckpt": b"one"}, volume=True)
    detail = guard(ctx, action("toy", ActionKind.TERMINATE, resource_id="pod1"))
    assert "stay on the network volume" in detail and ssh.quiesced
    assert not (tmp_path / "checkpoints").exists()
    # The dir lists on another mount (a symlink off the volume): the files die with the pod, so pull.
    ctx, _, ssh = world(tmp_path / "b", files={"s1.ckpt": b"one"}, volume=True)
    ssh.mount = "/"
    detail = guard(ctx, action("toy", ActionKind.TERMINATE, resource_id="pod1"))
    assert "final pull: 1 checkpoint file(s)" in detail


def test_terminate_before_its_volume_is_deleted_pulls_and_leaves_evidence_for_the_delete(
    tmp_path: Path,
) -> None:
    ctx, _, _ = world(tmp_path, files={"s1.ckpt": b"one"}, volume=True)
    term = action("toy", ActionKind.TERMINATE, resource_id="pod1")
    delete = action("toy", ActionKind.DELETE_VOLUME, "network_volume", resource_id="vol1")
    ctx.todo = [term, delete]
    assert "final pull: 1" in guard(ctx, term)
    ctx.machine = None  # terminated
    assert "pulled and verified through gpujob-toy" in guard(ctx, delete)
    (tmp_path / "checkpoints" / "s1.ckpt").write_bytes(b"changed locally since")
    with pytest.raises(GateError, match=r"local copy .* differs"):
        guard(ctx, delete)


def test_the_delete_takes_no_record_of_another_volume_as_evidence(tmp_path: Path) -> None:
    """Same job, same files, same local copies: a record that names another volume proves nothing."""
    ctx, _, _ = world(tmp_path, files={"s1.ckpt": b"one"}, volume=True)
    term = action("toy", ActionKind.TERMINATE, resource_id="pod1")
    delete = action("toy", ActionKind.DELETE_VOLUME, "network_volume", resource_id="vol1")
    ctx.todo = [term, delete]
    guard(ctx, term)
    ctx.machine = None
    record = load_pull_records(ctx.state_dir)["toy"]
    assert record.network_volume_id == "vol1" and record.complete
    save_pull_record(ctx.state_dir, record.model_copy(update={"network_volume_id": "vol-deleted-before"}))
    with pytest.raises(GateError, match=r"'s1.ckpt' \(not pulled\)"):
        guard(ctx, delete)


def test_removed_checkpoint_block_does_not_make_a_disk_with_files_safe(tmp_path: Path) -> None:
    ctx, _, ssh = world(tmp_path, files={"s1.ckpt": b"one"}, storage=VOLUME_DISK, checkpoint=None)
    with pytest.raises(GateError, match="no checkpoint block") as err:
        guard(ctx, action("toy", ActionKind.TERMINATE, resource_id="pod1"))
    assert "rm -r /workspace/ckpt" in err.value.render() and "relaunches it" in str(err.value)
    ssh.remote_files = {}
    assert "no checkpoint files" in guard(ctx, action("toy", ActionKind.TERMINATE, resource_id="pod1"))


def test_missing_verify_command_and_unpullable_names_refuse(tmp_path: Path) -> None:
    ctx, _, _ = world(tmp_path, files={"s1.ckpt": b"one"}, storage=VOLUME_DISK, checkpoint={"verify": None})
    with pytest.raises(GateError, match=r"checkpoint\.verify is not set"):
        guard(ctx, action("toy", ActionKind.TERMINATE, resource_id="pod1"))
    ctx, _, ssh = world(tmp_path / "b", files={"s1.ckpt": b"one"}, storage=VOLUME_DISK)
    listing = ssh.listing

    def with_a_link(remote_dir: str):  # type: ignore[no-untyped-def]
        got = listing(remote_dir)
        return got.model_copy(update={"unpullable": {"evil": "not a regular file (symbolic link)"}})

    ssh.listing = with_a_link  # type: ignore[method-assign]
    with pytest.raises(GateError, match="not pullable") as err:
        guard(ctx, action("toy", ActionKind.TERMINATE, resource_id="pod1"))
    assert "'evil'" in str(err.value) and "rename or remove" in err.value.render()


def test_volume_with_no_pod_is_pulled_through_the_cheapest_temporary_pod(tmp_path: Path) -> None:
    ctx, prov, _ = world(tmp_path, files={"s1.ckpt": b"one"}, volume=True)
    prov.resources.pop("pod1")
    ctx.machine = None
    detail = guard(ctx, action("toy", ActionKind.DELETE_VOLUME, "network_volume", resource_id="vol1"))
    assert "final pull: 1" in detail
    [(_, region)] = [c for c in prov.calls if c[0] == "create_machine"]
    req = prov.last_request
    assert (
        req is not None and req.name == naming.helper_name("toy", PROJECT) and req.network_volume_id == "vol1"
    )
    assert not req.spot and region.endswith("@EU-RO-1")
    assert ("terminate", next(r for r in prov.calls if r[0] == "terminate")[1]) in prov.calls
    assert [r for r in prov.resources.values() if r.kind == "pod"] == []  # the helper is gone


def test_temporary_pod_is_terminated_even_when_the_gate_refuses(tmp_path: Path) -> None:
    ctx, prov, _ = world(tmp_path, files={"s1.ckpt": b"one"}, volume=True, checkpoint={"verify": None})
    prov.resources.pop("pod1")
    ctx.machine = None
    with pytest.raises(GateError, match="verify is not set"):
        guard(ctx, action("toy", ActionKind.DELETE_VOLUME, "network_volume", resource_id="vol1"))
    assert [r for r in prov.resources.values() if r.kind == "pod"] == []


def test_unsafe_files_reads_the_local_copy_again(tmp_path: Path) -> None:
    data = b"weights"
    digest = hashlib.sha256(data).hexdigest()
    remote = {"a.ckpt": RemoteFile(size=len(data), sha256=digest)}
    rec = PullRecord(
        job="toy", platform="runpod", remote_dir="/w", local_dir=str(tmp_path), remote_files={"a.ckpt": digest},
        files=[PulledFile(name="a.ckpt", size=len(data), sha256=digest, remote_sha256=digest, verified=True, at=NOW)],
        at=NOW,
    )  # fmt: skip
    assert unsafe_files(remote, rec, tmp_path) == [
        f"'a.ckpt' (the local copy in {tmp_path} is missing or differs)"
    ]
    (tmp_path / "elsewhere").write_bytes(data)
    (tmp_path / "a.ckpt").symlink_to(tmp_path / "elsewhere")
    assert len(unsafe_files(remote, rec, tmp_path)) == 1  # a symlink is not a local copy
    (tmp_path / "a.ckpt").unlink()
    (tmp_path / "a.ckpt").write_bytes(data)
    assert unsafe_files(remote, rec, tmp_path) == []
    unverified = rec.model_copy(update={"files": [rec.files[0].model_copy(update={"verified": False})]})
    assert unsafe_files(remote, unverified, tmp_path) == ["'a.ckpt' (failed checkpoint.verify)"]
    assert unsafe_files(remote, None, tmp_path) == ["'a.ckpt' (not pulled)"]


def test_tiers():
    assert checkpoint_tier(make_spec()) == "network_volume"
    assert checkpoint_tier(make_spec(storage=VOLUME_DISK)) == "volume_disk"
    assert checkpoint_tier(make_spec(checkpoint={"dir": "/root/ckpt"})) == "container_disk"
    assert checkpoint_tier(make_spec(checkpoint=None)) is None


def test_tiers_strip_only_the_mounts_trailing_slashes():
    on = {"dir": "/dataX/ckpt"}
    assert (
        checkpoint_tier(make_spec(storage={**VOLUME_DISK, "mount": "/dataX/"}, checkpoint=on))
        == "volume_disk"
    )
    assert (
        checkpoint_tier(make_spec(storage={**VOLUME_DISK, "mount": "/dataX"}, checkpoint=on)) == "volume_disk"
    )


def test_auto_approve_is_not_an_approval():
    acts = [
        action("toy", ActionKind.PULL),
        action("toy", ActionKind.TERMINATE),
        action("toy", ActionKind.DELETE_VOLUME, "network_volume"),
    ]
    with pytest.raises(GateError) as err:
        require_approvals(acts, set())
    text = err.value.render()
    assert "--approve toy.pod.terminate --approve toy.network_volume.delete-volume" in text
    assert "toy.pod.pull" not in text
    require_approvals(acts, {"toy.pod.terminate", "toy.network_volume.delete-volume"})


def test_a_partial_approval_hint_approves_every_gated_action_again():
    """Approvals are not remembered: the hint re-approves the one given too, with the caller's command."""
    acts = [action("toy", ActionKind.TERMINATE), action("toy", ActionKind.DELETE_VOLUME, "network_volume")]
    with pytest.raises(GateError) as err:
        require_approvals(acts, {"toy.pod.terminate"}, command="gpujob destroy job.yaml --auto-approve")
    assert "need explicit approval: toy.network_volume.delete-volume " in str(err.value)
    assert err.value.hint == (
        "review the plan, then run: `gpujob destroy job.yaml --auto-approve "
        "--approve toy.pod.terminate --approve toy.network_volume.delete-volume`"
    )


def test_run_time_approval_hint_names_the_command_that_ran():
    term = action("toy", ActionKind.TERMINATE)
    with pytest.raises(GateError) as err:
        require_approved(
            term, {"other.pod.terminate"}, command="gpujob destroy --auto-approve", gated=[term.id]
        )
    assert err.value.hint == (
        "run: `gpujob destroy --auto-approve --approve toy.pod.terminate --approve other.pod.terminate`"
    )


def test_records_roundtrip(tmp_path):
    d = "a" * 64
    rec = PullRecord(
        job="toy", platform="runpod", remote_dir="/w", local_dir="/l", remote_files={"s.ckpt": d},
        files=[PulledFile(name="s.ckpt", size=1, sha256=d, remote_sha256=d, verified=True, at=NOW)], at=NOW,
    )  # fmt: skip
    save_pull_record(tmp_path, rec)
    got = load_pull_records(tmp_path)
    assert got["toy"].complete and got["toy"].files[0].checksum_ok
    (tmp_path / "pulls" / "junk.json").write_text("{not json")
    assert list(load_pull_records(tmp_path)) == ["toy"]


def test_stopped_network_volume_pod_is_not_started_just_to_be_looked_at(tmp_path: Path) -> None:
    """RP1: a stopped pod may not start at all; what it holds is on the network volume, which stays."""
    ctx, prov, ssh = world(tmp_path, files={"s1.ckpt": b"one"}, volume=True)
    assert ctx.machine is not None
    ctx.machine = prov._save(ctx.machine.model_copy(update={"status": "stopped", "ssh": None}))
    detail = guard(ctx, action("toy", ActionKind.REPLACE, resource_id="pod1"))
    assert "is stopped" in detail and "which stays" in detail
    assert prov.calls == [] and ssh.connects == []
    # The same pod about to lose its volume too (destroy) is started and pulled through.
    ctx.todo = [action("toy", ActionKind.DELETE_VOLUME, "network_volume", resource_id="vol1")]
    assert "final pull: 1" in guard(ctx, action("toy", ActionKind.TERMINATE, resource_id="pod1"))
    assert prov.calls[0] == ("start", "pod1")
