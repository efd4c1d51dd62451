"""The gang's launch and its preflight (gpujob.apply.runtime.gang) with an SSH layer whose "nodes" run
their commands with bash on this machine, each at its own loopback address: the preflight's listener
and connects are real, the GPUs come from a stand-in nvidia-smi. A node cut off (an address no host
has, as the simulator's partition fault makes it) fails the preflight by name and nothing launches."""

from __future__ import annotations

import asyncio
import contextlib
import os
import subprocess
from datetime import timedelta
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from gpujob.apply.runtime.gang import PreflightFailed, launch_gang
from gpujob.apply.runtime.remote import Target
from gpujob.apply.sshapi import SSHApi
from gpujob.live import LiveResource
from tests.apply.fakes import FakeClock

from .specs import gang_spec, live_nodes


class Node:
    """One node's shell: commands run here by bash, on a disk of its own (the mount gets the rank); the
    clock moves a second per command."""

    def __init__(self, rank: int, env: dict[str, str], clock: FakeClock, mount: Path) -> None:
        self.rank, self.env, self.clock, self.mount = rank, env, clock, str(mount)

    async def run(self, command: str, **_: Any) -> Any:
        self.clock.t += timedelta(seconds=1)
        command = command.replace(self.mount, f"{self.mount}-{self.rank}")
        out = await asyncio.to_thread(
            subprocess.run, ["bash", "-c", command], capture_output=True, text=True, env=self.env, timeout=60
        )
        return SimpleNamespace(stdout=out.stdout, exit_status=out.returncode)


def _world(
    tmp_path: Path,
    *,
    gpus: int = 1,
    cut: int | None = None,
    alive: set[int] = frozenset(),
    iface: str | None = "lo",
):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    smi = bin_dir / "nvidia-smi"
    smi.write_text("#!/bin/sh\n" + "echo 'NVIDIA GeForce RTX 4090'\n" * gpus)
    smi.chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}"}
    clock = FakeClock()
    net = 40 + os.getpid() % 200  # addresses of their own, away from other tests' listeners
    nodes = [
        n.model_copy(update={"private_ip": "192.0.2.9" if n.rank == cut else f"127.0.{net}.{n.rank + 1}"})
        for n in live_nodes(2, interface=iface)
    ]
    spec = gang_spec(nodes=2, launcher="torchrun", rendezvous_port=20000 + os.getpid() % 20000)
    spec = spec.model_copy(
        update={
            "storage": spec.storage.model_copy(update={"mount": str(tmp_path / "mnt")}),
            "checkpoint": spec.checkpoint.model_copy(update={"dir": str(tmp_path / "mnt/ckpt")}),  # type: ignore[union-attr]
        }
    )
    shells = {n.machine_id: Node(n.rank, env, clock, tmp_path / "mnt") for n in nodes}
    launched: list[tuple[int, str, dict[str, str]]] = []
    stopped: list[int] = []

    @contextlib.asynccontextmanager
    async def connect(endpoint: Any, **kw: Any):
        yield shells[kw["resource_id"]]

    async def run_status(remote: Node, spec: Any) -> Any:
        return SimpleNamespace(alive=remote.rank in alive)

    async def launch_run(remote: Node, spec: Any, *, secrets: Any, command: str, extra_env: Any) -> bool:
        launched.append((remote.rank, command, dict(extra_env)))
        return True

    async def quiesce_run(remote: Node, spec: Any, *, grace_s: float) -> Any:
        stopped.append(remote.rank)
        return SimpleNamespace(state="stopped")

    ssh = SSHApi(
        ensure_project_key=lambda d: (tmp_path / "key", "pub"),
        connect=connect,
        sync_tree=None,  # type: ignore[arg-type]
        pull_checkpoints=None,  # type: ignore[arg-type]
        launch_run=launch_run,
        run_status=run_status,
        quiesce_run=quiesce_run,
    )
    resource = LiveResource(
        platform="runpod", kind="cluster", id="c1", name="gpujob-gang", status="running", nodes=nodes
    )
    target = Target(
        spec=spec, spec_path=tmp_path / "job.yaml", provider=None, resource=resource, state_dir=tmp_path
    )  # type: ignore[arg-type]
    return SimpleNamespace(target=target, ssh=ssh, clock=clock, launched=launched, stopped=stopped, notes=[])


def _launch(w: Any) -> str:
    synced: list[Any] = []

    async def sync(remote: Any) -> None:
        synced.append(remote.rank)

    w.synced = synced
    return asyncio.run(launch_gang(w.target, w.ssh, w.clock, {}, w.notes.append, sync=sync))


def test_preflight_passes_then_every_node_starts_node_zero_first(tmp_path: Path) -> None:
    w = _world(tmp_path, iface=None)  # the platform did not name the interface: the node does
    out = _launch(w)
    assert out == "run launched on 2 node(s) of gpujob-gang"
    assert [r for r, _, _ in w.launched] == [0, 1] and w.synced == [0, 1]
    assert "--node-rank=1" in w.launched[1][1] and w.launched[1][2]["NODE_RANK"] == "1"
    assert w.launched[1][2]["NCCL_SOCKET_IFNAME"] == w.launched[1][2]["GLOO_SOCKET_IFNAME"] == "lo"
    (spent,) = [n for n in w.notes if n.startswith("preflight of 2 node(s)")]
    assert "took 6.0s" in spent and "about $0.0017 at $1.00/h" in spent  # 6 commands, 2 nodes at $0.50/h
    assert not any(
        (tmp_path / f"mnt-{r}/.gpujob/gang/preflight.pid").exists() for r in (0, 1)
    )  # the listeners are gone


def test_a_node_cut_off_the_private_network_is_named_and_nothing_launches(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("gpujob.apply.runtime.gangcheck.CONNECT_S", 1)  # the connect try, shortened
    w = _world(tmp_path, cut=1)
    with pytest.raises(PreflightFailed) as info:
        _launch(w)
    text = str(info.value)
    assert "node 0 (gpujob-gang-0): cannot reach node 1 (gpujob-gang-1) at 192.0.2.9:" in text
    assert "node 1 (gpujob-gang-1): could not listen on 192.0.2.9:" in text
    assert "preflight of 2 node(s) took" in (info.value.hint or "")
    assert w.launched == [] and w.synced == []


def test_a_node_without_its_gpus_fails_the_preflight(tmp_path: Path) -> None:
    w = _world(tmp_path, gpus=0)
    with pytest.raises(
        PreflightFailed, match=r"node 0 \(gpujob-gang-0\): sees 0 GPU\(s\), the job file asks for 1"
    ):
        _launch(w)
    assert w.launched == []


def test_a_gang_alive_on_one_node_only_is_stopped_and_started_whole(tmp_path: Path) -> None:
    w = _world(tmp_path, alive={0})
    out = _launch(w)
    assert w.stopped == [0] and [r for r, _, _ in w.launched] == [0, 1]
    assert "restarted: it was alive on node(s) [0] only" in out
    assert any(
        "node 0 (gpujob-gang-0): run stopped (stopped) so the whole gang restarts together" in n
        for n in w.notes
    )


def test_a_gang_alive_everywhere_is_left_alone(tmp_path: Path) -> None:
    w = _world(tmp_path, alive={0, 1})
    assert "not relaunched" in _launch(w) and w.launched == [] and w.stopped == []


def test_a_listener_left_a_zombie_counts_as_gone(tmp_path: Path) -> None:
    """A listener that ended but was not reaped yet (its parent is slow to, as a container whose PID 1
    is no init) holds no port: the stop waits no further for it. `sleep` is a stand-in that counts
    the stop's pauses instead of taking them."""
    from gpujob.apply.runtime.gangcheck import stop_script

    bin_dir, pauses = tmp_path / "bin", tmp_path / "pauses"
    bin_dir.mkdir()
    (bin_dir / "sleep").write_text(f"#!/bin/sh\necho x >> {pauses}\n")
    (bin_dir / "sleep").chmod(0o755)
    corpse = subprocess.Popen(["true"])  # never waited for until the end: a zombie of this process
    while not Path(f"/proc/{corpse.pid}/status").read_text().count("zombie"):
        os.sched_yield()
    (tmp_path / "preflight.pid").write_text(f"{corpse.pid}\n")
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}"}
    try:
        subprocess.run(["bash", "-c", stop_script(str(tmp_path))], env=env, check=True, timeout=30)
    finally:
        corpse.wait()
    assert not pauses.exists(), pauses.read_text().count("x")
    assert not (tmp_path / "preflight.pid").exists()
