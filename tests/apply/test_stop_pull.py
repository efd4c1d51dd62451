"""The Iron Law on gpujob's own stops (gpujob.apply.stop_pull): a stop that leaves a pod stopped with its
checkpoints on the volume disk pulls them after the quiesce and verifies the newest before the
provider's stop; a newest checkpoint that does not come home refuses the stop; a network volume, a stop
the same step undoes and a machine gpujob just started for a pull need no pull."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from gpujob.apply import quiesce, steps
from gpujob.apply.stop_pull import newest
from gpujob.errors import GateError
from gpujob.plan.model import ActionKind
from gpujob.plan.records import load_pull_record
from tests.apply.fakes import action
from tests.apply.test_gate import VOLUME_DISK
from tests.apply.test_one_stop import _ctx

FILES = {"step_1/model.pt": b"one", "step_2/model.pt": b"two", "step_2/optim.pt": b"22"}


def _stop(ctx):  # type: ignore[no-untyped-def]
    return asyncio.run(steps.stop(ctx, action("toy", ActionKind.STOP, resource_id="pod1")))


def test_a_stop_pulls_and_verifies_the_newest_checkpoint_after_the_quiesce(tmp_path: Path) -> None:
    ctx, _prov, ssh, seen = _ctx(tmp_path, storage=VOLUME_DISK)
    ssh.remote_files.update(FILES)
    out = _stop(ctx)
    assert seen == ["run", "workload", "stop"] and ctx.machine.status == "stopped"
    assert ssh.quiesced and (tmp_path / "checkpoints" / "step_2" / "optim.pt").read_bytes() == b"22"
    assert "newest checkpoint step_2 (2 file(s)" in out.detail and "pulled and verified first" in out.detail
    rec = load_pull_record(ctx.state_dir, "toy")
    assert rec is not None and rec.before_stop and rec.complete and rec.resource_id == "pod1"
    top, files, names = newest(rec)
    assert top == "step_2" and sorted(names) == ["step_2/model.pt", "step_2/optim.pt"] and len(files) == 2


def test_a_newest_checkpoint_that_does_not_come_home_refuses_the_stop(tmp_path: Path) -> None:
    ctx, prov, ssh, seen = _ctx(tmp_path, storage=VOLUME_DISK)
    ssh.remote_files.update(FILES)
    ssh.corrupt.add("step_2/optim.pt")
    with pytest.raises(GateError, match=r"the stop of .* is refused: the newest checkpoint 'step_2'") as err:
        _stop(ctx)
    text = err.value.render()
    assert "sha256 differs" in text and "bills 2× while stopped (RP4)" in text and "RP8" in text
    assert "stop" not in seen and prov.resources["pod1"].status == "running"


def test_a_failed_verify_of_the_newest_refuses_the_stop(tmp_path: Path) -> None:
    ctx, _prov, ssh, seen = _ctx(
        tmp_path,
        storage=VOLUME_DISK,
        checkpoint={"dir": "/workspace/ckpt", "interval": "1m", "verify": "false {file}"},
    )
    ssh.remote_files.update(FILES)
    with pytest.raises(GateError, match=r"failed checkpoint\.verify"):
        _stop(ctx)
    assert "stop" not in seen


def test_a_stop_with_the_checkpoints_on_a_network_volume_pulls_nothing(tmp_path: Path) -> None:
    ctx, _prov, ssh, seen = _ctx(tmp_path, volume=True)  # checkpoint.dir is on the mounted network volume
    ssh.remote_files.update(FILES)
    _stop(ctx)
    assert seen == ["run", "workload", "stop"] and not (tmp_path / "checkpoints").exists()
    assert load_pull_record(ctx.state_dir, "toy") is None


def test_a_stop_the_same_step_undoes_or_a_fresh_machine_pulls_nothing(tmp_path: Path) -> None:
    ctx, _prov, ssh, seen = _ctx(tmp_path, storage=VOLUME_DISK)
    ssh.remote_files.update(FILES)
    asyncio.run(quiesce.stop_for(ctx, ctx.machine, before="disk grow", lasting=False))
    assert seen == ["run", "workload", "stop"] and load_pull_record(ctx.state_dir, "toy") is None
    ctx2, _p, ssh2, seen2 = _ctx(tmp_path / "b", storage=VOLUME_DISK)
    ssh2.remote_files.update(FILES)
    asyncio.run(quiesce.stop_for(ctx2, ctx2.machine, fresh="started for the pull only"))
    assert seen2 == ["stop"] and load_pull_record(ctx2.state_dir, "toy") is None


def test_a_job_without_a_run_still_pulls_before_its_stop(tmp_path: Path) -> None:
    ctx, _prov, ssh, seen = _ctx(tmp_path, storage=VOLUME_DISK, run=None)
    ssh.remote_files.update(FILES)
    out = _stop(ctx)
    assert seen == ["stop"] and "newest checkpoint step_2" in out.detail
