"""In-memory fakes of the Provider protocol and of the SSH functions, for applier unit tests."""

from __future__ import annotations

import contextlib
import hashlib
import itertools
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from gpujob.apply.quiesce import stopping_through_quiesce
from gpujob.apply.sshapi import SSHApi
from gpujob.errors import ProviderCapacityError
from gpujob.jobfile.model import JobSpec
from gpujob.live import LiveResource, PriceQuote, SSHEndpoint
from gpujob.plan.model import Action, ActionKind, JobPlan, Plan
from gpujob.providers.base import LaunchRequest, VolumeRequest
from gpujob.ssh.deadline import Limits
from gpujob.ssh.launcher import Quiesce
from gpujob.ssh.pull import PulledCheckpoint, PullOutcome, RemoteFile, RemoteListing
from gpujob.ssh.workload import WorkloadQuiesce
from tests.owners import machine
from tests.owners import volume as owned_volume


class FakeClock:
    def __init__(self) -> None:
        self.t = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
        self.slept: list[float] = []

    def now(self) -> datetime:
        return self.t

    async def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.t += timedelta(seconds=seconds)


_ids = itertools.count(1)


class FakeProvider:
    def __init__(self, platform: str = "runpod") -> None:
        self.platform = platform
        self.resources: dict[str, LiveResource] = {}
        self.creates: Counter[str] = Counter()
        self.calls: list[tuple[str, str]] = []
        self.no_capacity: set[str] = set()  # gpu ids that raise ProviderCapacityError
        self.last_request: LaunchRequest | None = None

    def _save(self, r: LiveResource) -> LiveResource:
        self.resources[r.id] = r
        return r

    async def list_resources(self) -> list[LiveResource]:
        return list(self.resources.values())

    async def get(self, kind: str, resource_id: str) -> LiveResource | None:
        return self.resources.get(resource_id)

    async def quotes(self, counts: object = (1,)) -> list[PriceQuote]:
        return []

    async def create_machine(self, request: LaunchRequest) -> LiveResource:
        self.calls.append(("create_machine", f"{request.gpu_id}@{request.region}"))
        if request.gpu_id in self.no_capacity:
            raise ProviderCapacityError("out of capacity", platform=self.platform, call="create")
        self.creates[request.name] += 1
        self.last_request = request
        rid = f"pod{next(_ids)}"
        return self._save(
            LiveResource(
                platform="runpod",
                kind="pod",
                id=rid,
                name=request.name,
                status="running",
                gpu_id=request.gpu_id,
                region=request.region,
                spot=request.spot,
                network_volume_id=request.network_volume_id,
                ssh=SSHEndpoint(host="127.0.0.1", port=40000 + next(_ids)),
                # What RunPod reports back from the pod's env (gpujob.providers.runpod.normalize).
                attributes={"project": request.env["GPUJOB_PROJECT"]}
                if "GPUJOB_PROJECT" in request.env
                else {},
            )
        )

    async def start(self, resource: LiveResource) -> LiveResource:
        self.calls.append(("start", resource.id))
        port = 40000 + next(_ids)  # a restart lands on a new port
        return self._save(
            resource.model_copy(update={"status": "running", "ssh": SSHEndpoint(host="127.0.0.1", port=port)})
        )

    async def stop(self, resource: LiveResource) -> LiveResource:
        # Every stop gpujob makes goes through gpujob.apply.quiesce.stop (the job's processes get SIGTERM
        # and their grace first): a path that calls a provider's stop directly fails here.
        through = stopping_through_quiesce()
        assert through == resource.id, (
            f"stop of {resource.id} did not go through apply.quiesce.stop ({through})"
        )
        self.calls.append(("stop", resource.id))
        return self._save(resource.model_copy(update={"status": "stopped", "ssh": None}))

    async def terminate(self, resource: LiveResource) -> None:
        self.calls.append(("terminate", resource.id))
        self.resources.pop(resource.id, None)

    async def create_volume(self, request: VolumeRequest) -> LiveResource:
        self.calls.append(("create_volume", request.name))
        self.creates[request.name] += 1
        return self._save(
            LiveResource(
                platform="runpod",
                kind="network_volume",
                id=f"vol{next(_ids)}",
                name=request.name,
                status="available",
                region=request.region,
                volume_gb=request.size_gb,
            )
        )

    async def grow_volume(self, resource: LiveResource, size_gb: int) -> LiveResource:
        return self._save(resource.model_copy(update={"volume_gb": size_gb}))

    async def delete_volume(self, resource: LiveResource) -> None:
        self.calls.append(("delete_volume", resource.id))
        self.resources.pop(resource.id, None)

    async def release_ip(self, resource: LiveResource) -> None:
        self.resources.pop(resource.id, None)

    async def delete_snapshot(self, resource: LiveResource) -> None:
        self.resources.pop(resource.id, None)

    def ssh_endpoint(self, resource: LiveResource) -> SSHEndpoint | None:
        return resource.ssh


@dataclass
class FakeResult:
    exit_status: int
    stdout: str
    stderr: str = ""


@dataclass
class FakeRemote:
    ssh: FakeSSH
    endpoint: SSHEndpoint

    limits: Limits = field(default_factory=Limits)

    async def run(
        self, cmd: str, *, check: bool = True, input: str | None = None, **bounds: Any
    ) -> FakeResult:
        self.ssh.commands.append(cmd)
        return FakeResult(0, "")


@dataclass
class FakeStatus:
    alive: bool
    exit_code: int | None = None
    stopped_itself: str | None = None


@dataclass
class FakeSSH:
    """Remote checkpoint files live in `remote_files`; `corrupt` names are pulled with different bytes."""

    key_dir: Path
    remote_files: dict[str, bytes] = field(default_factory=dict)
    corrupt: set[str] = field(default_factory=set)
    alive: bool = False
    exit_code: int | None = None
    commands: list[str] = field(default_factory=list)
    connects: list[tuple[SSHEndpoint, dict[str, Any]]] = field(default_factory=list)
    launches: list[dict[str, str]] = field(default_factory=list)
    synced: list[tuple[Path, str]] = field(default_factory=list)
    remote_dir: str = "/workspace/ckpt"  # where remote_files live
    mount: str = "/workspace"
    listed: list[str] = field(default_factory=list)
    quiesced: list[float] = field(default_factory=list)
    workload_quiesced: list[float] = field(default_factory=list)  # grace of each workload quiesce
    workload: WorkloadQuiesce = field(default_factory=lambda: WorkloadQuiesce(state="none"))
    stopped_itself: str | None = None  # the launcher's record of a self-stop (teardown.on_finish/on_failure)

    def api(self) -> SSHApi:
        return SSHApi(
            ensure_project_key=self.ensure_project_key,
            connect=self.connect,
            sync_tree=self.sync_tree,
            pull_checkpoints=self.pull_checkpoints,
            launch_run=self.launch_run,
            run_status=self.run_status,
            list_checkpoints=self.list_checkpoints,
            quiesce_run=self.quiesce_run,
            quiesce_workload=self.quiesce_workload,
            recorded_checkpoint_dir=self.recorded_checkpoint_dir,
        )

    def ensure_project_key(self, state_dir: Path) -> tuple[Path, str]:
        return state_dir / "id_ed25519", "ssh-ed25519 AAAAFAKE gpujob"

    @contextlib.asynccontextmanager
    async def connect(self, endpoint: SSHEndpoint, **kwargs: Any):  # type: ignore[no-untyped-def]
        self.connects.append((endpoint, kwargs))
        yield FakeRemote(self, endpoint)

    async def sync_tree(
        self, remote: FakeRemote, src: Path, dest: str, exclude: list[str], progress: Any = None
    ) -> Any:
        self.synced.append((src, dest))
        return None

    def listing(self, remote_dir: str) -> RemoteListing:
        files = {
            name: RemoteFile(size=len(data), sha256=hashlib.sha256(data).hexdigest())
            for name, data in self.remote_files.items()
        }
        return RemoteListing(
            dir=remote_dir, exists=bool(files), real_dir=remote_dir, mount=self.mount, files=files
        )

    async def list_checkpoints(
        self, remote: FakeRemote, remote_dir: str, *, hashes: bool = True
    ) -> RemoteListing:
        self.listed.append(remote_dir)
        return self.listing(remote_dir) if remote_dir == self.remote_dir else RemoteListing(dir=remote_dir)

    async def quiesce_run(self, remote: FakeRemote, spec: JobSpec, *, grace_s: float) -> Quiesce:
        was = self.alive
        self.alive = False
        self.quiesced.append(grace_s)
        return Quiesce(state="stopped" if was else "not-running")

    async def quiesce_workload(self, remote: FakeRemote, spec: JobSpec, *, grace_s: float) -> WorkloadQuiesce:
        self.workload_quiesced.append(grace_s)
        return self.workload

    async def recorded_checkpoint_dir(self, remote: FakeRemote, spec: JobSpec) -> str | None:
        return self.remote_dir

    async def pull_checkpoints(
        self,
        remote: FakeRemote,
        remote_dir: str,
        local_dir: Path,
        *,
        verify: str | None,
        progress: Any = None,
    ) -> PullOutcome:
        out = []
        for name, data in self.remote_files.items():
            local = local_dir / name
            local.parent.mkdir(parents=True, exist_ok=True)
            local.write_bytes(data + b"X" if name in self.corrupt else data)
            digest = hashlib.sha256(data).hexdigest()
            out.append(
                PulledCheckpoint(
                    name=name, size=len(data), sha256=digest, remote_sha256=digest, verified=None,
                    verify_output="",
                )
            )  # fmt: skip
        return PullOutcome(files=out, listing=self.listing(remote_dir))

    async def launch_run(
        self, remote: FakeRemote, spec: JobSpec, *, secrets: dict[str, str], guard: object = None
    ) -> None:
        self.launches.append(dict(secrets))
        self.alive = True

    async def run_status(self, remote: FakeRemote, spec: JobSpec) -> FakeStatus:
        return FakeStatus(alive=self.alive, exit_code=self.exit_code, stopped_itself=self.stopped_itself)


@dataclass(frozen=True)
class FakeLoaded:
    spec: JobSpec
    path: Path


def make_spec(**over: Any) -> JobSpec:
    data: dict[str, Any] = {
        "version": 1,
        "name": "toy",
        "platform": "runpod",
        "machine": {"gpu": ["RTX4090", "A6000"], "spot": True, "regions": ["EU-RO-1"], "image": "img"},
        "storage": {"mount": "/workspace", "network_volume": {"name": "ckpts", "size_gb": 10}},
        "checkpoint": {"dir": "/workspace/ckpt", "interval": "1m", "verify": "true {file}"},
        "run": {"command": "python train.py", "secrets": ["HF_TOKEN"]},
    }
    for key, value in over.items():
        if value is None:
            data.pop(key, None)
        elif isinstance(value, dict) and isinstance(data.get(key), dict):
            data[key] = {**data[key], **value}
        else:
            data[key] = value
    return JobSpec.model_validate(data)


def action(
    job: str, kind: ActionKind, resource_kind: str = "pod", resource_id: str | None = None, **kw: Any
) -> Action:
    gated = kind in (
        ActionKind.TERMINATE,
        ActionKind.REPLACE,
        ActionKind.DELETE_VOLUME,
        ActionKind.RELEASE_IP,
        ActionKind.DELETE_SNAPSHOT,
    )
    name = owned_volume(job, "ckpts") if resource_kind == "network_volume" else machine(job)
    return Action(
        id=f"{job}.{resource_kind}.{kind.value}",
        job=job,
        platform="runpod",
        kind=kind,
        resource_kind=resource_kind,
        resource_name=name,
        resource_id=resource_id,
        gated=gated,
        **kw,
    )


def make_plan(*jobs: tuple[str, list[Action]]) -> Plan:
    return Plan(
        created_at=datetime(2026, 11, 29, tzinfo=UTC),
        gpujob_version="test",
        spec_digest="d",
        live_fingerprint="f",
        jobs=[
            JobPlan(job=j, platform="runpod", spec_file="job.yaml", desired_state="running", actions=a)
            for j, a in jobs
        ],
    )


def no_sshd(ssh: Any, ctx: Any) -> None:
    """Every SSH connect of `ssh` (a FakeSSH) is refused, as a machine with no sshd answers; `ctx` (a
    JobContext) gets the refusing SSH layer."""
    from gpujob.errors import SSHConnectError

    @contextlib.asynccontextmanager
    async def refuse(endpoint: Any, **kwargs: Any):  # type: ignore[no-untyped-def]
        ssh.connects.append((endpoint, kwargs))
        raise SSHConnectError(f"could not connect to {endpoint.host}:{endpoint.port} within 1s: refused")
        yield

    ssh.connect = refuse
    ctx.ssh = ssh.api()
