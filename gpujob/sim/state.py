"""The simulator's persistent state: one JSON document in the data dir, rewritten atomically on every
change so a restarted simulator still knows its resources.

Process handles (sshd pids) are kept in the state too, so `gpujob sim down` and a restart can find and
kill pods left by a crashed simulator."""

from __future__ import annotations

import json
import os
import secrets
import string
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class SimModel(BaseModel):
    model_config = ConfigDict(extra="ignore")


class Metered(SimModel):
    """Anything that bills: accrued USD per line item, metered up to `metered_to` (sim seconds)."""

    meter: dict[str, float] = Field(default_factory=dict)
    # hour index (unix seconds // 3600) -> line item -> USD: what the billing endpoints report per bucket
    buckets: dict[str, dict[str, float]] = Field(default_factory=dict)
    # hourly-billed line item -> [period start, per-second rate, hours billed so far]
    sessions: dict[str, list[float]] = Field(default_factory=dict)
    metered_to: float = 0.0
    created_at: float = 0.0
    ended_at: float | None = None


class RpPod(Metered):
    id: str
    name: str
    status: str = "PROVISIONING"
    interruptible: bool = False
    bid_per_gpu: float | None = None
    image: str = ""
    args: str = ""
    disk: int = 50
    ports: list[str] = Field(default_factory=lambda: ["8888/http", "22/tcp"])
    env: dict[str, str] = Field(default_factory=dict)
    registry: str | None = None
    template: str | None = None
    mounts: dict[str, Any] = Field(default_factory=dict)
    gpu_id: str | None = None
    gpu_count: int = 1
    requested_gpu_count: int = 1
    cloud: str = "SECURE"
    data_center: str = "US-KS-2"
    asked_data_centers: list[str] = Field(default_factory=list)  # the create's dataCenterIds, if it named any
    locked: bool = False
    authorized_keys: list[str] = Field(default_factory=list)
    direct_ssh: bool = True  # False: ssh.direct stays null (a community host; fault no_direct_ssh)
    public_22: bool = True  # False: port 22 is not published on a public address either
    started_at: float | None = None
    ssh_port: int | None = None
    sshd_pid: int | None = None
    host: int = 1  # bumped on a "new host": new port and host key
    gpu_fault: str | None = None  # the host's GPU is faulty: "xid" | "throttle" (gpujob/sim/gpuhost.py)
    min_cuda: str | None = None  # create filter gpu.minCudaVersion (RP9)
    cluster: dict[str, Any] | None = None  # PodCluster {id, rank}: a member of an Instant Cluster
    allowed_cuda: list[str] = Field(default_factory=list)  # gpu.allowedCudaVersions / GraphQL's
    gen: int = 0  # bumped on every transition so stale workers give up

    @property
    def volume_gb(self) -> int:
        return int((self.mounts.get("persistent") or {}).get("size") or 0)

    @property
    def network_volume_id(self) -> str | None:
        net = self.mounts.get("network") or []
        return net[0]["volumeId"] if net else None

    @property
    def mount_path(self) -> str:
        if self.mounts.get("persistent"):
            return str(self.mounts["persistent"].get("path") or "/workspace")
        net = self.mounts.get("network") or []
        return str(net[0].get("path") or "/workspace") if net else "/workspace"


class RpCluster(SimModel):
    """An Instant Cluster (v2 Cluster): its member pods are RpPods with `cluster` set, billed as pods."""

    id: str
    name: str
    type: str = "TRAINING"
    gpu_type_id: str
    gpu_count_per_pod: int = 1
    pod_count: int = 2
    data_center: str = "US-KS-2"
    created_at: float = 0.0
    net: int = 0  # the overlay's index: members' private addresses are 127.65.<net>.<rank + 1>


class RpEndpoint(Metered):
    """A serverless endpoint (v2 Endpoint). workers.min >= 1 keeps that many workers up, billed around
    the clock whether requests come or not."""

    id: str
    name: str
    image: str = ""
    pools: list[str] = Field(default_factory=list)
    gpu_count: int = 1
    workers_min: int = 0
    workers_max: int = 3
    data_centers: list[str] = Field(default_factory=list)


class RpVolume(Metered):
    id: str
    name: str
    size: int
    data_center: str
    type: str = "STANDARD"


class PsMachine(Metered):
    id: str
    name: str
    state: str = "provisioning"
    machine_type: str
    template_id: str
    disk_size: int
    region: str
    public_ip_type: str = "dynamic"
    public_ip: str | None = None
    auto_shutdown_enabled: bool = False
    auto_shutdown_timeout: float | None = None
    auto_shutdown_force: bool | None = None
    startup_script_id: str | None = None
    network_id: str | None = None  # a private network's id (networkId on create)
    private_ip: str | None = None  # its address there (privateIp)
    authorized_keys: list[str] = Field(default_factory=list)
    started_at: float | None = None
    modified_at: float = 0.0
    sshd_pid: int | None = None
    host: int = 1
    gen: int = 0
    gpu_fault: str | None = None  # the host's GPU is faulty: "xid" | "throttle" (gpujob/sim/gpuhost.py)


class PsIp(Metered):
    ip: str
    region: str
    assigned_machine_id: str | None = None


class PsSnapshot(Metered):
    id: str
    name: str
    machine_id: str
    size_gb: int
    is_auto_snapshot: bool = False


class PsScript(SimModel):
    id: str
    name: str
    script: str
    description: str | None = None
    is_run_once: bool = False
    is_enabled: bool = True
    assigned_machine_ids: list[str] = Field(default_factory=list)
    created_at: float = 0.0


class PsEvent(SimModel):
    id: str
    name: str
    state: str = "new"
    machine_id: str | None = None
    error: str | None = None
    created_at: float = 0.0
    started_at: float | None = None
    finished_at: float | None = None


class RpTemplate(SimModel):
    """A v2 template: a container-config preset. Does not bill; the audit lists it as a leftover."""

    id: str
    name: str
    image: str
    args: str = ""
    disk: int = 50
    ports: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)
    registry: str | None = None
    mounts: dict[str, Any] = Field(default_factory=dict)
    serverless: bool = False
    public: bool = False
    category: str = "NVIDIA"
    start_ssh: bool = True
    start_jupyter: bool = True
    allowed_cuda_versions: list[str] = Field(default_factory=list)


class RpRegistry(SimModel):
    """A v2 container registry credential: only id and name are ever returned (credentials are write-only)."""

    id: str
    name: str


class PsTemplate(SimModel):
    """A Paperspace custom template, made from a machine."""

    id: str
    name: str
    region: str
    parent_machine_id: str
    default_size_gb: int
    created_at: float = 0.0


class PsNetwork(SimModel):
    id: str
    name: str
    region: str
    created_at: float = 0.0
    net: int = 0  # its machines' private addresses are 127.64.<net>.<n>


def private_ip(prefix: int, net: int, host: int) -> str:
    """A private address in the simulator: all of 127/8 reaches `lo`, so every member reaches every other."""
    return f"127.{prefix}.{net % 250 + 1}.{host % 250 + 1}"


class PsDrive(SimModel):
    """A Paperspace shared drive (lives in a private network)."""

    id: str
    name: str
    network_id: str
    region: str
    size: int
    created_at: float = 0.0


class RpQueued(SimModel):
    """A queued pod (Deploy When Available; gpujob.sim.runpod_queue): a create waiting for capacity."""

    id: str
    name: str
    status: str = "QUEUED"  # QUEUED | DEPLOYED | FAILED | EXPIRED | CANCELLED
    body: dict[str, Any] = Field(default_factory=dict)  # the create request, kept to deploy it
    pod_id: str | None = None
    failure_reason: str | None = None
    created_at: float = 0.0
    expires_at: float | None = None
    checks: int = 0  # placement attempts so far


class SimState(SimModel):
    clock: float = 0.0  # simulated now when last saved
    pods: dict[str, RpPod] = Field(default_factory=dict)
    volumes: dict[str, RpVolume] = Field(default_factory=dict)
    ssh_keys: list[str] = Field(default_factory=list)
    machines: dict[str, PsMachine] = Field(default_factory=dict)
    ips: dict[str, PsIp] = Field(default_factory=dict)
    snapshots: dict[str, PsSnapshot] = Field(default_factory=dict)
    scripts: dict[str, PsScript] = Field(default_factory=dict)
    events: dict[str, PsEvent] = Field(default_factory=dict)
    templates: dict[str, RpTemplate] = Field(default_factory=dict)
    registries: dict[str, RpRegistry] = Field(default_factory=dict)
    custom_templates: dict[str, PsTemplate] = Field(default_factory=dict)
    networks: dict[str, PsNetwork] = Field(default_factory=dict)
    drives: dict[str, PsDrive] = Field(default_factory=dict)
    clusters: dict[str, RpCluster] = Field(default_factory=dict)
    endpoints: dict[str, RpEndpoint] = Field(default_factory=dict)
    queued: dict[str, RpQueued] = Field(default_factory=dict)
    ip_counter: int = 0
    # private networks and cluster overlays made so far (their address blocks), from a random start per
    # account, so two simulators on one host (one per test worker) rarely hand out the same addresses
    net_counter: int = Field(default_factory=lambda: secrets.randbelow(250))
    ip_base: int = Field(default_factory=lambda: secrets.randbelow(200))
    balance_exhausted: bool = False


def new_id(length: int = 14, alphabet: str = string.ascii_lowercase + string.digits) -> str:
    return "".join(secrets.choice(alphabet) for _ in range(length))


def load_state(path: Path) -> SimState:
    if not path.exists():
        return SimState()
    return SimState.model_validate_json(path.read_text())


def save_state(path: Path, state: SimState) -> None:
    """Atomic: write a temp file then rename, so a crash never leaves half a state file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(state.model_dump(mode="json"), indent=1))
    os.replace(tmp, path)
