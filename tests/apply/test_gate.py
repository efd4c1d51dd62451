from __future__ import annotations

from datetime import UTC, datetime

import pytest

from gpujob.apply.gate import check_gate, checkpoint_tier, require_approvals
from gpujob.apply.records import PulledFile, PullRecord, load_pull_records, save_pull_record
from gpujob.errors import GateError
from gpujob.plan.model import ActionKind
from tests.apply.fakes import action, make_spec

NOW = datetime(2026, 11, 29, tzinfo=UTC)


def record(*, resource_id="pod1", volume_id="vol1", files=None, remote=None, **kw) -> PullRecord:
    remote = {"step_10.ckpt": "a" * 64} if remote is None else remote
    if files is None:
        files = [
            PulledFile(name=n, size=1, sha256=d, remote_sha256=d, verified=True, at=NOW)
            for n, d in remote.items()
        ]
    return PullRecord(
        job="toy",
        platform="runpod",
        resource_id=resource_id,
        network_volume_id=volume_id,
        remote_dir="/workspace/ckpt",
        local_dir="/tmp/x",
        remote_files=remote,
        files=files,
        at=NOW,
        **kw,
    )


def test_tiers():
    assert checkpoint_tier(make_spec()) == "network_volume"
    assert checkpoint_tier(make_spec(storage={"network_volume": None})) == "volume_disk"
    assert checkpoint_tier(make_spec(checkpoint={"dir": "/root/ckpt"})) == "container_disk"
    assert checkpoint_tier(make_spec(checkpoint=None)) is None


def test_terminate_of_pod_with_checkpoints_on_network_volume_needs_only_approval():
    term = action("toy", ActionKind.TERMINATE, resource_id="pod1")
    with pytest.raises(GateError, match="not approved") as err:
        check_gate(term, make_spec(), None, set())
    assert "--approve toy.pod.terminate" in err.value.render()
    check_gate(term, make_spec(), None, {"toy.pod.terminate"})


def test_delete_volume_needs_pull_verify_and_approval():
    spec = make_spec()
    delete = action("toy", ActionKind.DELETE_VOLUME, "network_volume", resource_id="vol1")
    approved = {delete.id}
    with pytest.raises(GateError, match="never pulled") as err:
        check_gate(delete, spec, None, approved)
    assert "gpujob pull" in err.value.render()
    with pytest.raises(GateError, match="never pulled"):  # a record of another volume proves nothing
        check_gate(delete, spec, record(volume_id="vol9"), approved)
    bad_sum = record(files=[PulledFile(name="step_10.ckpt", size=1, sha256="b" * 64, verified=True, at=NOW)])
    with pytest.raises(GateError, match="checksum mismatch"):
        check_gate(delete, spec, bad_sum, approved)
    missing = record(remote={"a.ckpt": "a" * 64, "b.ckpt": "c" * 64}, files=[])
    with pytest.raises(GateError, match="2 checkpoint file"):
        check_gate(delete, spec, missing, approved)
    unverified = record(
        files=[
            PulledFile(
                name="step_10.ckpt", size=1, sha256="a" * 64, remote_sha256="a" * 64, verified=False, at=NOW
            )
        ]
    )
    with pytest.raises(GateError, match="failed `true"):
        check_gate(delete, spec, unverified, approved)
    with pytest.raises(GateError, match="not approved"):
        check_gate(delete, spec, record(), set())
    check_gate(delete, spec, record(), approved)


def test_terminate_with_checkpoints_on_volume_disk_needs_pull_from_that_pod():
    spec = make_spec(storage={"network_volume": None})
    term = action("toy", ActionKind.TERMINATE, resource_id="pod1")
    with pytest.raises(GateError, match="never pulled"):
        check_gate(term, spec, record(resource_id="pod0"), {term.id})
    check_gate(term, spec, record(resource_id="pod1"), {term.id})


def test_missing_verify_command_refuses():
    spec = make_spec(storage={"network_volume": None}, checkpoint={"verify": None})
    term = action("toy", ActionKind.TERMINATE, resource_id="pod1")
    with pytest.raises(GateError, match=r"checkpoint\.verify is not set"):
        check_gate(term, spec, record(), {term.id})


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


def test_records_roundtrip(tmp_path):
    save_pull_record(tmp_path, record())
    got = load_pull_records(tmp_path)
    assert got["toy"].complete and got["toy"].files[0].checksum_ok
    (tmp_path / "pulls" / "junk.json").write_text("{not json")
    assert list(load_pull_records(tmp_path)) == ["toy"]
