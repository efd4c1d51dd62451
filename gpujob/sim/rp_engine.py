"""RunPod lifecycles: pods (on-demand and interruptible) and network volumes, with the survival
matrix enforced on disk:

  <data>/runpod/pods/<id>/container/{root,tmp}  container disk: wiped on stop / restart / preempt
  <data>/runpod/pods/<id>/volume                 volume disk (/workspace): kept on stop, gone on terminate
  <data>/runpod/volumes/<id>                     network volume: survives everything until deleted
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path
from typing import Any

from gpujob.sim import podisks, podproc, selfstop
from gpujob.sim.engine import SimError, Simulator, wipe
from gpujob.sim.gpuhost import GpuHost
from gpujob.sim.state import RpPod, RpVolume, new_id

ACTIONS = {
    "PROVISIONING": ["stop", "terminate"],
    "STARTING": ["stop", "terminate"],
    "RUNNING": ["stop", "restart", "terminate"],
    "EXITED": ["start", "terminate"],
    "ERROR": ["start", "terminate"],
    "TERMINATED": [],
}
CAPACITY_DETAIL = "no capacity: the requested GPU type is not available in the requested data centers"


def pod_dir(sim: Simulator, pod_id: str) -> Path:
    return sim.data_dir / "runpod" / "pods" / pod_id


def volume_dir(sim: Simulator, vol_id: str) -> Path:
    return sim.data_dir / "runpod" / "volumes" / vol_id


def get_pod(sim: Simulator, pod_id: str) -> RpPod:
    pod = sim.state.pods.get(pod_id)
    if pod is None or pod.ended_at is not None:
        raise SimError(404, "pod not found", "not_found")
    return pod


CUDA_DETAIL = "no capacity: no machine with the requested GPU type reports an acceptable CUDA version"


def cuda_fits(host: str, pod: RpPod) -> bool:
    """RP9 filters: a floor compared numerically (12.10 > 12.2), or an exact set (v2 CreateGpuConfig)."""
    if pod.min_cuda and _cuda_order(host) < _cuda_order(pod.min_cuda):
        return False
    return not pod.allowed_cuda or host in pod.allowed_cuda


def _cuda_order(version: str) -> tuple[int, int]:
    """How RunPod orders CUDA versions (12.10 above 12.2): the platform's own rule, so the sim's copy."""
    major, _, minor = version.partition(".")
    return int(major), int(minor or 0)


def create_pod(sim: Simulator, pod: RpPod, *, source: str = "rest") -> tuple[RpPod, bool]:
    """Validate placement, register the pod and boot it in the background.
    Returns (pod, created_but_500): the create_500_but_created fault creates and then fails."""
    with sim.lock:
        region = pod.data_center
        if sim.state.balance_exhausted:
            raise SimError(402, "insufficient balance: add funds to deploy a pod", "balance")
        if sim.rp_prices.gpu(pod.gpu_id or "") is None:
            raise SimError(400, f"gpu type '{pod.gpu_id}' is not a valid GPU type id", "bad_request")
        if sim.faults.take("capacity", platform="runpod", gpu=pod.gpu_id, region=region):
            raise SimError(400, CAPACITY_DETAIL, "capacity")
        if not cuda_fits(sim.options.host_cuda, pod):
            raise SimError(400, CUDA_DETAIL, "capacity")
        vol_id = pod.network_volume_id
        if vol_id:
            vol = sim.state.volumes.get(vol_id)
            if vol is None or vol.ended_at is not None:
                raise SimError(400, f"network volume {vol_id} not found", "bad_request")
            # RP7: a pod mounts a network volume only in the volume's data center, and any number of
            # pods may mount it at once (they share its files: _mounts)
            if pod.asked_data_centers and vol.data_center not in pod.asked_data_centers:
                raise SimError(
                    400,
                    f"network volume {vol_id} is in data center {vol.data_center}, not in the requested "
                    f"{', '.join(pod.asked_data_centers)}",
                    "bad_request",
                )
            pod.data_center = vol.data_center
        fail_after = sim.faults.take("create_500_but_created", platform="runpod") is not None
        hidden = sim.faults.take("no_direct_ssh", platform="runpod", gpu=pod.gpu_id, cloud=pod.cloud)
        if hidden is not None:
            pod.direct_ssh, pod.public_22 = False, hidden.public_port
        faulty = sim.faults.take("gpu_fault", platform="runpod", gpu=pod.gpu_id)
        if faulty is not None:
            pod.gpu_fault = faulty.kind or "xid"
        pod.created_at = pod.metered_to = sim.now()
        pod.status = "PROVISIONING"
        sim.state.pods[pod.id] = pod
        d = pod_dir(sim, pod.id)
        for sub in ("container/root", "container/tmp", "volume"):
            (d / sub).mkdir(parents=True, exist_ok=True)
        pod.gen += 1
        gen = pod.gen
        sim.save()
    sim.spawn(boot, sim, pod.id, gen, sim.options.provision_seconds)
    return pod, fail_after


def _mounts(sim: Simulator, pod: RpPod) -> dict[str, Path]:
    d = pod_dir(sim, pod.id)
    ws = volume_dir(sim, pod.network_volume_id) if pod.network_volume_id else d / "volume"
    own = {pod.mount_path: ws, "/root": d / "container" / "root", "/tmp": d / "container" / "tmp"}
    return own | _image_python(own)


def _image_python(own: dict[str, Path]) -> dict[str, Path]:
    """The simulated image's Python, as RunPod's pytorch images carry PyTorch: the simulator's own
    installation (with the test torch in its lib/gpujob-test-torch, tests/torchenv.py), seen in the pod
    at its own path when one of the pod's own dirs (/root, for a pyenv) would hide it. Neither is on the
    pod's PATH or PYTHONPATH: a command that wants them names them (the multi-node test's run.env)."""
    import sys

    prefix = Path(sys.prefix).resolve()
    hidden = any(prefix.is_relative_to(target) for target in own)
    return {str(prefix): prefix} if hidden and prefix.is_dir() else {}


def _disks(sim: Simulator, pod: RpPod) -> dict[str, tuple[Path, int]]:
    """The container disk (`/`: everything not on the volume) and the volume, each at its own size."""
    d = pod_dir(sim, pod.id)
    vol = sim.state.volumes.get(pod.network_volume_id or "")
    volume_gb = vol.size if vol is not None else pod.volume_gb
    return {"/": (d / "container", pod.disk), pod.mount_path: (_mounts(sim, pod)[pod.mount_path], volume_gb)}


def boot(sim: Simulator, pod_id: str, gen: int, delay: float) -> None:
    time.sleep(delay)
    with sim.lock:
        pod = sim.state.pods.get(pod_id)
        if pod is None or pod.gen != gen:
            return
        sim.accrue(pod)
        pod.status = "STARTING"
        port = podproc.free_port()
        launch = podproc.PodLaunch(
            key=sim.pod_key("runpod", pod.id),
            ctl_dir=pod_dir(sim, pod.id) / "ctl",
            mounts=_mounts(sim, pod),
            listen="127.0.0.1",
            port=port,
            authorized_keys=pod.authorized_keys,
            env={**pod.env, "RUNPOD_POD_ID": pod.id, "RUNPOD_GPU_COUNT": str(pod.gpu_count)},
            new_host_key=pod.host != _host_of_key(sim, pod),
            ssh_faults=sim.options.ssh_faults,
            gpu=GpuHost(model=pod.gpu_id or "NVIDIA GPU", count=pod.gpu_count, fault=pod.gpu_fault),
        )
        podisks.write(launch.ctl_dir, _disks(sim, pod))
        if sim.control_url:
            selfstop.write_tools(launch.ctl_dir, sim.control_url, "runpod", pod.id, sim.self_stop_secret)
        # A custom image that never starts sshd (RP10): the pod runs, its mapped port refuses.
        no_sshd = sim.faults.take("no_sshd", platform="runpod", pod_id=pod.id) is not None
    time.sleep(sim.options.boot_seconds)
    pid = None if no_sshd else sim.launch("runpod", pod_id, launch, "127.0.0.1")
    with sim.lock:
        pod = sim.state.pods.get(pod_id)
        if pod is None or pod.gen != gen:
            sim.kill("runpod", pod_id, pid)
            return
        try:
            ctl = pod_dir(sim, pod_id) / "ctl"
            ctl.mkdir(exist_ok=True)  # without pods (no sshd) nothing else made it; not parents: see below
            (ctl / "host_gen").write_text(str(pod.host))
        except FileNotFoundError:  # the simulator was shut down (its data dir removed) while booting
            sim.kill("runpod", pod_id, pid)
            return
        if pid is None and sim.options.pods and not no_sshd:
            sim.accrue(pod)
            pod.status = "ERROR"
            sim.save()
            return
        sim.accrue(pod)
        pod.status, pod.started_at, pod.sshd_pid = "RUNNING", sim.now(), pid
        pod.ssh_port = port if sim.options.pods else None
        sim.save()


def _host_of_key(sim: Simulator, pod: RpPod) -> int:
    try:
        return int((pod_dir(sim, pod.id) / "ctl" / "host_gen").read_text())
    except (OSError, ValueError):
        return pod.host


def _down(sim: Simulator, pod: RpPod, status: str, grace: float) -> tuple[int | None, int]:
    """Mark the pod down under the lock; returns the sshd pid to kill outside it."""
    sim.accrue(pod)
    pid = pod.sshd_pid
    pod.status, pod.ssh_port, pod.sshd_pid, pod.started_at = status, None, None, None
    pod.gen += 1
    return pid, pod.gen


def stop(sim: Simulator, pod_id: str, *, grace: float | None = None, check: bool = True) -> RpPod:
    with sim.lock:
        pod = get_pod(sim, pod_id)
        if check and "stop" not in ACTIONS[pod.status]:
            raise SimError(409, f"cannot stop a pod in status {pod.status}", "conflict")
        if check and pod.locked:
            raise SimError(409, "pod is locked", "conflict")
        pid, _ = _down(sim, pod, "EXITED", 0)
        sim.save()
    sim.kill("runpod", pod_id, pid, sim.options.stop_grace if grace is None else grace)
    wipe(pod_dir(sim, pod_id) / "container")
    (pod_dir(sim, pod_id) / "container" / "root").mkdir(exist_ok=True)
    (pod_dir(sim, pod_id) / "container" / "tmp").mkdir(exist_ok=True)
    return pod


def start(sim: Simulator, pod_id: str, *, gpu_count: int | None = None, bid: float | None = None) -> RpPod:
    with sim.lock:
        pod = get_pod(sim, pod_id)
        if "start" not in ACTIONS[pod.status]:
            raise SimError(409, f"cannot start a pod in status {pod.status}", "conflict")
        if sim.state.balance_exhausted:
            raise SimError(402, "insufficient balance: add funds to start this pod", "balance")
        if pod.cluster and sim.faults.take(
            "capacity", platform="runpod", gpu=pod.gpu_id, region=pod.data_center, cloud=pod.cloud
        ):  # a lost member comes back only where its cluster is: no GPU free there, no start
            raise SimError(400, CAPACITY_DETAIL, "capacity")
        sim.accrue(pod)
        if sim.faults.take("zero_gpu", platform="runpod", pod_id=pod.id, gpu=pod.gpu_id):
            pod.gpu_count = 0  # RP1: the host's GPUs were rented away while the pod was stopped
        else:
            pod.gpu_count = gpu_count if gpu_count is not None else pod.requested_gpu_count
        if bid is not None:
            pod.bid_per_gpu = bid
        pod.status = "STARTING"
        pod.gen += 1
        gen = pod.gen
        sim.save()
    sim.spawn(boot, sim, pod_id, gen, 0.0)
    return pod


def restart(sim: Simulator, pod_id: str) -> RpPod:
    with sim.lock:
        pod = get_pod(sim, pod_id)
        if "restart" not in ACTIONS[pod.status]:
            raise SimError(409, f"cannot restart a pod in status {pod.status}", "conflict")
        pid, gen = _down(sim, pod, "STARTING", 0)
        if sim.options.new_host_on_restart:
            pod.host += 1
        sim.save()
    sim.kill("runpod", pod_id, pid)
    wipe(pod_dir(sim, pod_id) / "container")
    sim.spawn(boot, sim, pod_id, gen, 0.0)
    return pod


def terminate(sim: Simulator, pod_id: str) -> None:
    with sim.lock:
        pod = get_pod(sim, pod_id)
        pid, _ = _down(sim, pod, "TERMINATED", 0)
        pod.ended_at = sim.now()
        sim.save()
    sim.kill("runpod", pod_id, pid)
    shutil.rmtree(pod_dir(sim, pod_id), ignore_errors=True)


def preempt(sim: Simulator, pod_id: str | None, grace: float | None) -> list[str]:
    """Interruptible pods: SIGTERM to the pod's processes, SIGKILL after the grace; volume kept.

    One member of an Instant Cluster (`pod_id` with a `cluster` block) is lost the same way, though it is
    on-demand: its host fails or is reclaimed, and RunPod then lists the member EXITED in the cluster,
    costing nothing, its volume kept, the other members running on. Without `pod_id` no member is hit: a
    cluster loses one node at a time."""
    with sim.lock:
        ids = [
            p.id
            for p in sim.state.pods.values()
            if p.ended_at is None and p.interruptible and p.status == "RUNNING"
        ]
        if pod_id:
            pod = get_pod(sim, pod_id)
            if not pod.interruptible and not pod.cluster:
                raise SimError(409, f"pod {pod_id} is not interruptible", "conflict")
            ids = [pod_id] if pod.ended_at is None and pod.status == "RUNNING" else []
    g = (
        grace
        if grace is not None
        else (
            sim.options.preempt_grace if sim.options.preempt_grace is not None else sim.rp_prices.spot_grace()
        )
    )
    for pid in ids:
        stop(sim, pid, grace=g, check=False)
    return ids


def oom_kill(sim: Simulator, pod_id: str | None) -> list[str]:
    """The pod's cgroup runs out of memory: its oom_kill counter rises and the kernel SIGKILLs its
    largest process (the training run, not the sshd), as the OOM killer does (U41)."""
    from gpujob.sim.gpuhost import oom_kill as count_it

    if not pod_id:
        raise SimError(400, "oom needs --pod-id")
    with sim.lock:
        pod = get_pod(sim, pod_id)
        if pod.status != "RUNNING" or not pod.sshd_pid:
            raise SimError(409, f"pod {pod_id} is not running", "conflict")
        pid1, key = pod.sshd_pid, sim.pod_key("runpod", pod_id)
    count_it(pod_dir(sim, pod_id) / "ctl")
    victim = podproc.largest(pid1, key)
    if victim is not None:
        podproc.kill_one(victim)
    return [pod_id]


def on_tick(sim: Simulator, exhausted: bool) -> None:
    """Each tick (gpujob.sim.engine): an exhausted balance stops every running pod."""
    if exhausted:
        stop_all(sim, reason="balance")


def stop_all(sim: Simulator, reason: str) -> list[str]:
    with sim.lock:
        ids = [
            p.id
            for p in sim.state.pods.values()
            if p.ended_at is None and p.status in ("PROVISIONING", "STARTING", "RUNNING")
        ]
    for pid in ids:
        stop(sim, pid, check=False)
    return ids


# --- network volumes
def get_volume(sim: Simulator, vol_id: str) -> RpVolume:
    vol = sim.state.volumes.get(vol_id)
    if vol is None or vol.ended_at is not None:
        raise SimError(404, "network volume not found", "not_found")
    return vol


def create_volume(sim: Simulator, name: str, size: int, data_center: str, vtype: str) -> RpVolume:
    with sim.lock:
        if sim.state.balance_exhausted:
            raise SimError(402, "insufficient balance", "balance")
        vol = RpVolume(id=new_id(10), name=name, size=size, data_center=data_center, type=vtype)
        vol.created_at = vol.metered_to = sim.now()
        sim.state.volumes[vol.id] = vol
        volume_dir(sim, vol.id).mkdir(parents=True, exist_ok=True)
        sim.save()
        return vol


def update_volume(sim: Simulator, vol_id: str, body: dict[str, Any]) -> RpVolume:
    with sim.lock:
        vol = get_volume(sim, vol_id)
        if "size" in body:
            if body["size"] < vol.size:
                raise SimError(
                    400,
                    f"network volume storage cannot be reduced (current size {vol.size} GB)",
                    "bad_request",
                )
            sim.accrue(vol)
            vol.size = body["size"]
        if "name" in body:
            vol.name = body["name"]
        sim.save()
        return vol


def delete_volume(sim: Simulator, vol_id: str) -> None:
    with sim.lock:
        vol = get_volume(sim, vol_id)
        users = [
            p.id for p in sim.state.pods.values() if p.ended_at is None and p.network_volume_id == vol_id
        ]
        if users:
            raise SimError(
                400,
                f"network volume is attached to pod(s) {', '.join(users)}; terminate them first",
                "bad_request",
            )
        sim.accrue(vol)
        vol.ended_at = sim.now()
        sim.save()
    shutil.rmtree(volume_dir(sim, vol_id), ignore_errors=True)
