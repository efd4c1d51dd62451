"""How the teardown gate's look reaches a disk (gpujob.apply.teardown_look), against the fakes: which
listing counts as on the network volume's mount, a stopped machine started for the look (RP1: even
with zero GPUs), the machine the apply goes on with afterwards, an unreachable machine and the
.unverified override, and node 0's empty dir under checkpoint.writers: all."""

from __future__ import annotations

import asyncio
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from gpujob.apply import reach_gate
from gpujob.apply.teardown_look import _every_writer, on_mount, start_for_disk
from gpujob.errors import GateError, GpujobError
from gpujob.live import LiveNode, LiveResource, SSHEndpoint
from gpujob.providers.base import ZeroGpuError
from tests.apply.fakes import FakeProvider, no_sshd
from tests.apply.look_world import look, notes, seen_world
from tests.apply.test_gate import VOLUME_DISK, world
from tests.gang.specs import gang_spec

UNVERIFIED = {"toy.pod.terminate", "toy.pod.terminate.unverified"}


# --- on the mount ----------------------------------------------------------------------------------------


def _listed(real: str | None, mount: str = "/workspace", d: str = "/workspace/ckpt") -> Any:
    return SimpleNamespace(dir=d, real_dir=real, mount=mount)


def test_a_dir_is_on_the_mount_only_through_a_machine_with_a_volume(tmp_path: Path) -> None:
    ctx, _, _ = world(tmp_path, volume=True)
    pod = ctx.machine
    assert on_mount(_listed("/workspace/ckpt"), pod, ctx)
    assert on_mount(_listed(None), pod, ctx)  # no resolved path: the dir as named
    assert not on_mount(_listed("/workspace/ckpt"), None, ctx)
    assert not on_mount(_listed("/workspace/ckpt"), pod.model_copy(update={"network_volume_id": None}), ctx)


@pytest.mark.parametrize(
    ("mount", "real"),
    [
        ("/workspace", "/root/ckpt"),  # a symlink off the volume
        ("/workspace", "/workspace2/ckpt"),  # beside the mount, sharing its name's start
        ("/mnt/X", "/mnt/Y/ckpt"),
    ],
)
def test_a_dir_that_resolves_off_the_mount_is_not_on_it(tmp_path: Path, mount: str, real: str) -> None:
    ctx, _, _ = world(tmp_path, volume=True)
    pod = ctx.machine.model_copy(update={"mount_path": mount})
    assert not on_mount(_listed(real, mount=mount, d=f"{mount}/ckpt"), pod, ctx)
    assert on_mount(_listed(f"{mount}/ckpt", mount=mount, d=f"{mount}/ckpt"), pod, ctx)


def test_a_volume_mounted_at_the_root_holds_every_dir(tmp_path: Path) -> None:
    ctx, _, _ = world(tmp_path, volume=True)
    pod = ctx.machine.model_copy(update={"mount_path": "/"})
    assert on_mount(_listed("/ckpt", mount="/", d="/ckpt"), pod, ctx)
    assert not on_mount(_listed("/ckpt", mount="/workspace", d="/ckpt"), pod, ctx)  # listed on another mount


# --- started for the look --------------------------------------------------------------------------------


class ZeroGpuProvider(FakeProvider):
    """RP1: the start fails with zero GPUs, and the pod is then as `came_back` says."""

    def __init__(self, came_back: dict[str, Any] | None) -> None:
        super().__init__()
        self.came_back = came_back

    async def start(self, resource: LiveResource) -> LiveResource:
        self.calls.append(("start", resource.id))
        if self.came_back is None:  # gone
            self.resources.pop(resource.id)
        else:
            self._save(resource.model_copy(update=self.came_back))
        raise ZeroGpuError("no GPU free on its host", platform="runpod", call="start")

    async def get(self, kind: str, resource_id: str) -> LiveResource | None:
        got = self.resources.get(resource_id)
        return got if got is not None and got.kind == kind else None


def _zero_gpu_world(
    tmp_path: Path, came_back: dict[str, Any] | None
) -> tuple[Any, ZeroGpuProvider, LiveResource]:
    ctx, _, _ = world(tmp_path)
    prov = ZeroGpuProvider(came_back)
    stopped = prov._save(ctx.machine.model_copy(update={"status": "stopped", "ssh": None}))
    ctx.provider, ctx.machine = prov, stopped
    return ctx, prov, stopped


def test_a_pod_that_comes_back_with_zero_gpus_is_enough_to_copy_its_checkpoints(tmp_path: Path) -> None:
    endpoint = SSHEndpoint(host="127.0.0.1", port=40999)
    ctx, _, stopped = _zero_gpu_world(tmp_path, {"status": "running", "ssh": endpoint})
    started = asyncio.run(start_for_disk(ctx, stopped, "to copy its disk"))
    assert started.status == "running" and started.ssh == endpoint
    assert notes(ctx) == [
        f"starting {stopped.name} to copy its disk",
        f"{stopped.name} came back with zero GPUs (RP1): enough to copy its checkpoints",
    ]
    assert ctx.moved is True  # started by this apply: its host may be new


@pytest.mark.parametrize(
    "came_back",
    [
        {"status": "exited", "ssh": SSHEndpoint(host="127.0.0.1", port=40999)},
        {"status": "running", "ssh": None},
        None,  # gone
    ],
)
def test_a_zero_gpu_pod_that_does_not_run_with_an_endpoint_fails_the_start(
    tmp_path: Path, came_back: dict[str, Any] | None
) -> None:
    ctx, _, stopped = _zero_gpu_world(tmp_path, came_back)
    with pytest.raises(ZeroGpuError):
        asyncio.run(start_for_disk(ctx, stopped, "to copy its disk"))
    assert ctx.moved is False


def test_a_start_that_fails_is_the_error_not_an_unreachable_refusal(tmp_path: Path) -> None:
    ctx, _, _ = _zero_gpu_world(tmp_path, {"status": "exited"})
    ctx.approvals |= UNVERIFIED  # the override is for a machine that cannot be reached, not this
    with pytest.raises(ZeroGpuError):
        look(ctx)


def test_a_stopped_machine_is_started_for_the_look_and_the_apply_goes_on_with_it(tmp_path: Path) -> None:
    ctx, prov, ssh = seen_world(tmp_path, files={"s1.ckpt": b"one"}, storage=VOLUME_DISK)
    ctx.machine = prov._save(ctx.machine.model_copy(update={"status": "stopped", "ssh": None}))
    look(ctx)
    assert f"starting {ctx.machine.name} so the gate can look at its disk" in notes(ctx)
    assert ctx.machine == prov.resources["pod1"] and ctx.machine.status == "running"
    assert ("start", "pod1") in prov.calls
    assert ssh.connects[0][0] == ctx.machine.ssh and ssh.connects[0][1]["expect_new_host"] is True


def test_its_own_running_machine_keeps_its_known_host_and_gets_its_fresh_endpoint(tmp_path: Path) -> None:
    ctx, prov, ssh = seen_world(tmp_path, files={"s1.ckpt": b"one"}, storage=VOLUME_DISK)
    ctx.machine = ctx.machine.model_copy(update={"ssh": None})  # as read before the platform gave its port
    look(ctx)
    assert ctx.machine.ssh == prov.resources["pod1"].ssh
    assert "expect_new_host" not in ssh.connects[0][1]  # not started by this apply: its host key is pinned


def test_a_look_through_another_machine_treats_its_host_as_new_and_leaves_the_jobs_machine(
    tmp_path: Path,
) -> None:
    ctx, prov, ssh = seen_world(tmp_path, files={"s1.ckpt": b"one"}, volume=True)
    job_machine = ctx.machine
    helper = prov._save(
        job_machine.model_copy(
            update={
                "id": "helper1",
                "name": "gpujob-helper",
                "ssh": SSHEndpoint(host="127.0.0.1", port=40777),
            }
        )
    )
    said = look(ctx, machine=helper, evidence_for="vol1", through="a temporary pod (helper1)")
    assert "final pull: 1 checkpoint file(s)" in said
    assert ctx.machine is job_machine
    assert ssh.connects[0][0].port == 40777 and ssh.connects[0][1]["expect_new_host"] is True
    evidence = ctx.evidence["vol1"]
    assert evidence.through == "a temporary pod (helper1)" and list(evidence.listing.files) == ["s1.ckpt"]
    assert evidence.local_dir == tmp_path / "checkpoints"
    look(ctx, evidence_for="vol1")  # through its own machine, named by default
    assert ctx.evidence["vol1"].through == f"{job_machine.name} (pod1)"


# --- unreachable -----------------------------------------------------------------------------------------


def test_a_machine_already_unreachable_in_this_command_is_not_waited_for_again(tmp_path: Path) -> None:
    ctx, _, ssh = seen_world(tmp_path, files={"s1.ckpt": b"one"}, storage=VOLUME_DISK)
    ctx.extra[reach_gate.UNREACHED] = "pod1"
    ctx.approvals |= UNVERIFIED
    assert look(ctx) == (
        f"NOT CHECKED: {ctx.machine.name} was unreachable earlier in this command and "
        "toy.pod.terminate.unverified was approved"
    )
    assert ssh.connects == []
    ctx.approvals = {"toy.pod.terminate"}  # without the override: looked at
    assert "final pull" in look(ctx)


def test_an_unreachable_machine_goes_ahead_unverified_only_as_approved_and_says_so(tmp_path: Path) -> None:
    ctx, _, ssh = seen_world(tmp_path, files={"s1.ckpt": b"one"}, storage=VOLUME_DISK)
    no_sshd(ssh, ctx)
    ctx.approvals |= UNVERIFIED
    name = ctx.machine.name
    assert look(ctx) == (f"NOT CHECKED: {name} was unreachable and toy.pod.terminate.unverified was approved")
    (said,) = [n for n in notes(ctx) if n.startswith("DATA LOSS")]
    assert said.startswith(
        f"DATA LOSS approved: {name} could not be reached (toy: no SSH answer from pod {name} at "
    )
    assert said.endswith(
        "); toy.pod.terminate goes ahead unverified, as approved with toy.pod.terminate.unverified"
    )


def test_a_machine_started_for_a_failed_look_that_will_not_stop_again_is_the_one_the_apply_knows(
    tmp_path: Path,
) -> None:
    ctx, prov, ssh = seen_world(tmp_path, files={"s1.ckpt": b"one"}, storage=VOLUME_DISK)
    ctx.machine = prov._save(ctx.machine.model_copy(update={"status": "stopped", "ssh": None}))
    no_sshd(ssh, ctx)

    async def stop(resource: LiveResource) -> LiveResource:
        raise GpujobError("the platform refused the stop")

    prov.stop = stop  # type: ignore[method-assign]
    with pytest.raises(GateError, match="refused: cannot reach"):
        look(ctx)
    # it runs (and bills): the apply's machine is the started one, and the user is told to stop it
    assert ctx.machine is not None and ctx.machine.status == "running"
    assert any("could not be stopped again" in n and "stop it in the console" in n for n in notes(ctx))


# --- checkpoint.writers: all -------------------------------------------------------------------------------


def test_node_0s_empty_dir_still_takes_every_writers_final_pull(tmp_path: Path) -> None:
    ctx, _, _ = seen_world(
        tmp_path, storage=VOLUME_DISK, machine={"nodes": 2}, checkpoint={"writers": "all"}, alive=False
    )
    # node 1 is not in the cluster the fake reports: its shards cannot be pulled, so the gate refuses
    with pytest.raises(GpujobError) as err:
        look(ctx)
    assert (
        str(err.value) == "toy: cannot pull node 1's checkpoints: it has no SSH endpoint (not in the cluster)"
    )


def test_a_gang_without_a_step_every_writer_has_is_refused_after_every_writers_pull(tmp_path: Path) -> None:
    ctx, prov, ssh = seen_world(
        tmp_path,
        files={"step-2/rank0.pt": b"new"},
        storage=VOLUME_DISK,
        machine={"nodes": 2},
        checkpoint={"writers": "all"},
        alive=False,
    )
    node1 = SSHEndpoint(host="127.0.0.1", port=40002)
    nodes = [
        LiveNode(rank=0, machine_id="pod1", name=ctx.machine.name, status="running", ssh=ctx.machine.ssh),
        LiveNode(rank=1, machine_id="pod2", name="gpujob-toy-1", status="running", ssh=node1),
    ]
    ctx.machine = prov._save(ctx.machine.model_copy(update={"nodes": nodes}))
    ssh.by_port[node1.port] = {"step-1/rank1.pt": b"old"}  # node 1 never wrote step 2
    with pytest.raises(GateError) as err:
        look(ctx)
    assert str(err.value) == (
        f"toy.pod.terminate: 1 checkpoint file(s) in /workspace/ckpt on {ctx.machine.name} have no verified "
        "local copy right before the terminate: no checkpoint step is complete: writer node(s) [0, 1] have "
        "steps the others lack; a teardown now would leave no step every writer agrees on"
    )
    assert (tmp_path / "checkpoints" / "node-1" / "step-1" / "rank1.pt").read_bytes() == b"old"


def test_every_writer_hands_node_0s_own_listing_to_erased() -> None:
    empty = SimpleNamespace(files={}, unpullable={})
    listings = {"/workspace/ckpt": empty}
    ctx = SimpleNamespace(spec=gang_spec(writers="all"))
    assert _every_writer(ctx, listings, lambda lst: lst is empty) == listings
    assert _every_writer(ctx, {"/workspace/other": empty}, lambda lst: True) == {}
