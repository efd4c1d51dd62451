"""The one protocol the planner and applier see a platform through.

Each platform (runpod/, paperspace/) has the same three files: client.py (one method per HTTP call,
error mapping, retries), wire.py (WireModel payloads, extra="ignore"), provider.py (wire <-> live
models, waits until the observed state matches). Providers never print, prompt, or sleep except
through the injected Clock.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Literal, Protocol, runtime_checkable

from pydantic import Field

from gpujob.errors import ProviderCapacityError, ProviderError
from gpujob.live import Account, LiveResource, Metering, PriceQuote, ResourceRef, SSHEndpoint
from gpujob.model import Model, Platform


class LaunchRequest(Model):
    """Everything needed to create the job's pod / machine on one candidate (GPU, region, cloud)."""

    name: str
    gpu_id: str = Field(description="Platform GPU id (RunPod gpuTypeId) or machineType (Paperspace).")
    gpu_count: int = 1
    region: str | None = None
    cloud: Literal["secure", "community"] = "secure"
    spot: bool | Literal["prefer"] = Field(
        False, description="prefer: spot where the platform still offers it, else on-demand (RunPod decides)."
    )
    max_price_per_hour: float | None = Field(
        None, description="machine.max_price_per_hour: what an on-demand fallback of `prefer` may cost."
    )
    image: str | None = None
    template: str | None = None
    container_disk_gb: int | None = None
    volume_gb: int | None = None
    mount_path: str = "/workspace"
    network_volume_id: str | None = None
    public_ip: Literal["static", "dynamic", "none"] | None = None
    auto_shutdown_hours: float | None = None
    env: dict[str, str] = Field(default_factory=dict, description="Non-secret env only; secrets go over SSH.")
    ssh_public_key: str | None = None
    bid_per_gpu: float | None = None
    min_cuda: str | None = Field(
        None, description="The image's CUDA (major.minor, from its tag): only hosts that run it (RP9)."
    )
    network_id: str | None = Field(None, description="Paperspace: the private network a node joins.")
    nodes: int = Field(
        1,
        ge=1,
        description="machine.nodes: more than 1 makes one group of that many identical machines, all or "
        "nothing (RunPod: an Instant Cluster; Paperspace: machines in one private network).",
    )


class VolumeRequest(Model):
    name: str
    size_gb: int
    region: str
    tier: Literal["standard", "high-performance"] = "standard"


@runtime_checkable
class Provider(Protocol):
    platform: Platform

    async def list_resources(self) -> list[LiveResource]:
        """Every billable resource in the account (all pages), normalised. One pass serves every job."""
        ...

    async def get(self, kind: str, resource_id: str) -> LiveResource | None:
        """One resource by id, or None when it no longer exists."""
        ...

    async def quotes(self, counts: Iterable[int] = (1,)) -> list[PriceQuote]:
        """Live GPU prices (catalog), or the profile's table when the API has none. Stock is asked for
        each GPU count in `counts` (the counts the jobs want), on every cloud."""
        ...

    def platform_now(self) -> datetime:
        """The platform's clock (from its last HTTP Date header): what it bills is timed by it."""
        ...

    async def metering(self, refs: Sequence[ResourceRef]) -> Metering:
        """What the platform itself reports about these resources' money or metered time (live or gone):
        RunPod's billing records, Paperspace's machine events. Failures land in `Metering.errors`."""
        ...

    async def account(self) -> Account | None:
        """Balance and spend rate where the platform reports them (RunPod GraphQL `myself`), else None."""
        ...

    async def create_machine(self, request: LaunchRequest) -> LiveResource:
        """Create a pod / machine. Not idempotent at the API: on timeout or 5xx the implementation looks
        the name up before retrying and never creates twice. Raises ProviderCapacityError when the
        candidate has no capacity. Returns once the resource is running with an SSH endpoint."""
        ...

    async def start(self, resource: LiveResource) -> LiveResource:
        """Start and wait until running; a start that returns 200 and does nothing is detected."""
        ...

    async def stop(self, resource: LiveResource) -> LiveResource: ...

    async def terminate(self, resource: LiveResource) -> None:
        """Terminate a pod / destroy a machine. Idempotent: an absent resource returns silently."""
        ...

    async def create_volume(self, request: VolumeRequest) -> LiveResource: ...

    async def grow_volume(self, resource: LiveResource, size_gb: int) -> LiveResource: ...

    async def delete_volume(self, resource: LiveResource) -> None: ...

    async def release_ip(self, resource: LiveResource) -> None: ...

    async def delete_snapshot(self, resource: LiveResource) -> None: ...

    def ssh_endpoint(self, resource: LiveResource) -> SSHEndpoint | None:
        """Where to SSH now (re-read after every start: ports and dynamic IPs change)."""
        ...


# Typed outcomes the applier can act on (added with the provider clients).


class NoEffectError(ProviderError):
    """An action was accepted (HTTP 2xx) but the resource never moved: e.g. a start that stays EXITED."""


class ZeroGpuError(ProviderCapacityError):
    """RunPod RP1: a stopped pod restarted on its old host with zero GPUs. Replace it (terminate + create)."""
