"""The teardown gate's look at a disk (gpujob.apply.teardown_look.inspect_disk), against the fakes, with
real local files: which dirs it lists and trusts, what the final pull brings home and relists, what it
says when it lets the teardown go, and the exact refusals and hints when it does not. Which look the
gate takes is tests/apply/test_gate_teardown.py; the same look end to end is
tests/reliability/test_teardown_gate.py."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from gpujob.errors import GateError
from gpujob.plan.capability import Capability
from gpujob.plan.records import PullRecord, save_pull_record
from tests.apply.fakes import FakeRemote
from tests.apply.look_world import listing, look, notes, seen_world
from tests.apply.test_gate import VOLUME_DISK

CK = "/workspace/ckpt"


def test_the_final_pull_brings_every_file_home_and_says_so(tmp_path: Path) -> None:
    ctx, _, ssh = seen_world(tmp_path, files={"s1.ckpt": b"one", "sub/s2.ckpt": b"two"}, storage=VOLUME_DISK)
    said = look(ctx)
    assert said == (
        "the run exited after SIGTERM; final pull: 2 checkpoint file(s) (6 B) in /workspace/ckpt listed "
        "again and each matched a verified local copy"
    )
    assert (tmp_path / "checkpoints" / "sub" / "s2.ckpt").read_bytes() == b"two"
    # the look lists without hashes (the pull hashes), the listing right before the teardown with them
    assert [h for h in ssh.hashed if h[0] == CK] == [(CK, False), (CK, True)]
    # every step ran on the one connection the look opened
    assert ssh.remotes and all(isinstance(r, FakeRemote) for r in ssh.remotes)
    assert len({id(r) for r in ssh.remotes}) == 1 and len(ssh.connects) == 1


def test_files_the_run_removed_while_pulling_are_named(tmp_path: Path) -> None:
    ctx, _, ssh = seen_world(tmp_path, files={"s1.ckpt": b"one"}, storage=VOLUME_DISK)
    ssh.vanished = ["s0.ckpt"]
    look(ctx)
    assert "removed by the run while pulling (its keep: 3 rotation): 's0.ckpt'" in notes(ctx)


def test_files_that_stay_on_the_volume_are_listed_and_left(tmp_path: Path) -> None:
    ctx, _, ssh = seen_world(tmp_path, files={"s1.ckpt": b"one"}, volume=True)
    said = look(ctx, erased=lambda lst: False)
    assert said == (
        "the run exited after SIGTERM; 1 checkpoint file(s) in /workspace/ckpt stay on the network volume "
        "(listed on its mount /workspace)"
    )
    assert not (tmp_path / "checkpoints").exists() and ssh.pulled is False
    ssh.remote_files = {}
    assert look(ctx) == "no run was alive; no checkpoint files on the disks it erases"


class Says(Capability):
    """A capability that keeps something else on the disks (e.g. outputs): what it was given, what it says."""

    def __init__(self, said: str) -> None:
        self.said = said
        self.given: list[tuple[Any, Any]] = []

    async def before_erase(self, ctx: Any, action: Any, remote: Any, machine: Any, erased: Any) -> str:
        self.given.append((remote, erased))
        return self.said


@pytest.mark.parametrize("files", [{}, {"s1.ckpt": b"one"}])
def test_each_capability_that_keeps_something_on_the_disk_is_asked_and_heard(
    tmp_path: Path, files: dict[str, bytes]
) -> None:
    ctx, _, _ = seen_world(tmp_path, files=files, storage=VOLUME_DISK)
    caps = (Says("outputs: 2 file(s) pulled"), Says(""), Says("logs kept"))
    ctx.capabilities = caps

    def erased(lst: Any) -> bool:
        return True

    said = look(ctx, erased=erased)
    assert said.endswith("; outputs: 2 file(s) pulled; logs kept") and "; ;" not in said
    for cap in caps:
        ((remote, given),) = cap.given
        assert isinstance(remote, FakeRemote) and given is erased


def test_an_entry_the_pull_could_not_take_refuses_with_how_to_go_on(tmp_path: Path) -> None:
    ctx, _, ssh = seen_world(tmp_path, files={"s1.ckpt": b"one"}, storage=VOLUME_DISK)
    ssh.after_pull = {"evil": "not a regular file (symbolic link)"}  # appeared after the look
    name = ctx.machine.name
    with pytest.raises(GateError) as err:
        look(ctx)
    assert str(err.value) == (
        f"toy.pod.terminate: 1 checkpoint file(s) in /workspace/ckpt on {name} have no verified local copy "
        "right before the terminate: 'evil' (not pullable: not a regular file (symbolic link)) (the run "
        f"exited after SIGTERM for this check; `gpujob apply` relaunches it on {name} if you keep the job)"
    )
    assert err.value.hint == (
        f"gpujob pull, then run the command again (inspect the local copies in {tmp_path / 'checkpoints'})"
    )


def test_the_refusal_names_five_of_the_files_without_a_local_copy(tmp_path: Path) -> None:
    files = {f"s{i}.ckpt": b"x" * i for i in range(1, 7)}
    ctx, _, ssh = seen_world(tmp_path, files=files, storage=VOLUME_DISK, alive=False)
    ssh.corrupt = set(files)  # each pulled with other bytes than the disk holds
    with pytest.raises(GateError) as err:
        look(ctx)
    named = "; ".join(f"'s{i}.ckpt' (the remote copy changed after the pull)" for i in range(1, 6))
    # no run was alive: nothing to relaunch, so no word of it
    assert str(err.value) == (
        f"toy.pod.terminate: 6 checkpoint file(s) in /workspace/ckpt on {ctx.machine.name} have no verified "
        f"local copy right before the terminate: {named}"
    )


def test_files_no_checkpoint_block_pulls_are_refused_with_how_to_keep_or_delete_them(tmp_path: Path) -> None:
    ctx, _, ssh = seen_world(tmp_path, storage=VOLUME_DISK, checkpoint=None, alive=False)
    ssh.dirs[CK] = listing(
        CK, {"a.ckpt": b"1", "b.ckpt": b"2"}, {"link": "not a regular file (symbolic link)"}
    )
    with pytest.raises(GateError) as err:
        look(ctx)
    assert str(err.value) == (
        f"toy.pod.terminate: 3 file(s) in /workspace/ckpt on {ctx.machine.name} (pod1) would be erased: the job "
        "file has no checkpoint block, so nothing pulls them"
    )
    assert err.value.hint == (
        "put the checkpoint block back (dir: /workspace/ckpt, pull_to, verify) in job.yaml and run the command "
        "again; or, if they are not needed, delete them first: gpujob ssh -- rm -r /workspace/ckpt"
    )


OLD = "/workspace/old ckpt"  # where the last pull read, before checkpoint.dir moved


def _moved_refusal(ctx: Any) -> tuple[str, str]:
    return (
        f"toy.pod.terminate: 1 file(s) in {OLD} on {ctx.machine.name} (pod1) would be erased: checkpoint.dir "
        "is now /workspace/ckpt, so nothing pulls them",
        "copy what you need (gpujob ssh -- ls -la '/workspace/old ckpt'), or delete them: "
        "gpujob ssh -- rm -r '/workspace/old ckpt'; then run the command again",
    )


def _pulled_from(ctx: Any, remote_dir: str) -> None:
    save_pull_record(
        ctx.state_dir,
        PullRecord(job="toy", platform="runpod", remote_dir=remote_dir, local_dir="/l", at=ctx.clock.now()),
    )


def test_the_last_pulls_dir_is_listed_too_and_files_left_there_refuse(tmp_path: Path) -> None:
    ctx, _, ssh = seen_world(tmp_path, storage=VOLUME_DISK, alive=False)
    ssh.marker = None
    ssh.dirs[OLD] = listing(OLD, {"s1.ckpt": b"one"})
    _pulled_from(ctx, OLD)
    with pytest.raises(GateError) as err:
        look(ctx)
    assert (str(err.value), err.value.hint) == _moved_refusal(ctx)


@pytest.mark.parametrize("recorded", ["old-relative-dir", None])
def test_the_last_runs_dir_is_listed_after_a_record_that_names_no_usable_dir(
    tmp_path: Path, recorded: str | None
) -> None:
    """The launcher's record of the last run's dir is read whenever a run or a checkpoint could have
    been there (a job file without a run block, or a pull record of a dir that is no remote path)."""
    ctx, _, ssh = seen_world(tmp_path, storage=VOLUME_DISK, run=None, alive=False)
    ssh.marker = OLD
    ssh.dirs[OLD] = listing(OLD, {"s1.ckpt": b"one"})
    if recorded:
        _pulled_from(ctx, recorded)
    with pytest.raises(GateError) as err:
        look(ctx)
    assert (str(err.value), err.value.hint) == _moved_refusal(ctx)


def test_no_run_no_checkpoint_and_no_pull_reads_no_record_of_a_run(tmp_path: Path) -> None:
    ctx, _, ssh = seen_world(tmp_path, storage=VOLUME_DISK, run=None, checkpoint=None, alive=False)
    ssh.dirs[CK] = listing(CK, {"a.ckpt": b"1"})  # what a marker would point at
    assert look(ctx) == "no run was alive; no checkpoint files on the disks it erases"
    assert ssh.marker_asked == 0
    _pulled_from(ctx, "/workspace/elsewhere")  # a pull once happened: a run may have left its dir
    with pytest.raises(GateError, match="no checkpoint block"):
        look(ctx)
    assert ssh.marker_asked == 1


def test_no_verify_command_refuses_with_how_to_set_it(tmp_path: Path) -> None:
    ctx, _, _ = seen_world(
        tmp_path, files={"s1.ckpt": b"one"}, storage=VOLUME_DISK, checkpoint={"verify": None}, alive=False
    )
    with pytest.raises(GateError) as err:
        look(ctx)
    assert str(err.value) == (
        f"toy.pod.terminate: would erase 1 checkpoint file(s) in /workspace/ckpt on {ctx.machine.name} (pod1), "
        "and checkpoint.verify is not set, so no pulled copy can be verified"
    )
    assert err.value.hint == (
        "set checkpoint.verify in the job file (e.g. python verify_ckpt.py {file}), then run the command again"
    )


def test_unpullable_entries_refuse_naming_five_of_them(tmp_path: Path) -> None:
    ctx, _, ssh = seen_world(tmp_path, storage=VOLUME_DISK, alive=False)
    odd = {f"link{i}": "not a regular file (symbolic link)" for i in range(6, 0, -1)}
    ssh.dirs[CK] = listing(CK, {"s1.ckpt": b"one"}, odd)
    with pytest.raises(GateError) as err:
        look(ctx)
    named = "; ".join(f"'link{i}' (not a regular file (symbolic link))" for i in range(1, 6))
    assert str(err.value) == (
        f"toy.pod.terminate: 6 entr(y/ies) in /workspace/ckpt on {ctx.machine.name} (pod1) are not pullable "
        f"and would be erased: {named}"
    )
    assert err.value.hint == (
        "rename or remove them on the machine (gpujob ssh -- ls -la /workspace/ckpt), then run the command again"
    )


def test_a_workload_stopped_for_the_check_is_named_in_the_refusal(tmp_path: Path) -> None:
    from gpujob.ssh.workload import StoppedProcess, WorkloadQuiesce

    ctx, _, ssh = seen_world(
        tmp_path, files={"s1.ckpt": b"one"}, storage=VOLUME_DISK, checkpoint={"verify": None}, alive=False
    )
    ssh.workload = WorkloadQuiesce(state="stopped", stopped=[StoppedProcess(pid=42, name="python")])
    with pytest.raises(GateError) as err:
        look(ctx)
    assert str(err.value).endswith(
        " (no run was alive; 1 more workload process(es) exited after SIGTERM: python (42) for this check; "
        f"`gpujob apply` relaunches it on {ctx.machine.name} if you keep the job)"
    )
