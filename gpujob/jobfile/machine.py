"""The job file's `machine:` block: the GPU machine wanted, and how many of them (`nodes`)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any, Literal

from pydantic import Field, field_validator

from gpujob.jobfile.durations import Duration
from gpujob.jobfile.rules import one_or_many as _one
from gpujob.model import Model


class MachineSpec(Model):
    """The GPU machine wanted. gpujob maps the GPU names onto each platform's identifiers."""

    gpu: list[str] = Field(
        min_length=1,
        description="GPU alias or preference-ordered list of aliases (H100-80GB, A100-80GB, A6000, RTX4090, ...).",
    )
    gpu_count: int = Field(1, ge=1, le=8, description="GPUs per machine.")
    nodes: int = Field(
        1,
        ge=1,
        le=250,
        description="Machines (nodes) of one multi-node job, each with gpu_count GPUs, on one private network: "
        "a RunPod Instant Cluster or Paperspace machines in a private network (docs/multinode.md). The "
        "platform's bounds and the GPUs that can cluster are in its profile. 1: one machine.",
    )
    spot: bool | Literal["prefer"] = Field(
        False,
        description="RunPod interruptible (spot) pricing; ~5 s SIGTERM grace. `prefer`: spot where the "
        "platform still offers it, on-demand where it does not (decided at each create or resume, within "
        "max_price_per_hour; never replaces a running pod; on Paperspace always on-demand). `true` on RunPod "
        "after its spot API is retired is an error wherever a spot create or resume is needed.",
    )
    cloud: Literal["secure", "community"] | None = Field(
        None, description="RunPod cloud: secure (default) or community. Not on Paperspace."
    )
    regions: list[str] = Field(
        default_factory=list,
        description="RunPod data centers or Paperspace regions, in preference order. Empty = any.",
    )
    image: str | None = Field(
        None, description="RunPod container image; pin by @sha256 digest for reproducibility."
    )
    template: str | None = Field(
        None,
        description="Paperspace Core template: an OS or custom template id (t0nspur5) or its name "
        "(exactly, or lower-case with hyphens for spaces: ml-in-a-box).",
    )
    container_disk_gb: int | None = Field(
        None, ge=1, le=1000, description="RunPod container disk (wiped on stop)."
    )
    public_ip: Literal["static", "dynamic", "none"] | None = Field(
        None,
        description="Paperspace public IP: static (bills until released), dynamic (new IP each start), none.",
    )
    auto_shutdown: Duration | None = Field(
        None,
        description="Paperspace Core auto-shutdown in whole hours (wall clock on Linux, 1h–1w). Unset = disabled.",
    )
    max_price_per_hour: float | None = Field(
        None,
        gt=0,
        le=1000,
        description="Refuse offers above this many USD/h for the machine (a finite number, at most 1000).",
    )

    when_unavailable: Literal["fail", "wait"] = Field(
        "fail",
        description="No capacity on any candidate: `fail` (retry a while, then the next platform or fail) or "
        "`wait` (RunPod: queue the create, Deploy When Available, billing nothing until placed).",
    )
    wait_up_to: Duration | None = Field(
        None,
        description="`when_unavailable: wait`: how long to wait for capacity, then fall back or fail (unset: 2h).",
    )

    @property
    def wait_for(self) -> timedelta:
        return self.wait_up_to or timedelta(hours=2)  # machine.wait_up_to, or its default

    @field_validator("gpu", mode="before")
    @classmethod
    def _one_or_many(cls, value: Any) -> Any:
        return _one(value)
