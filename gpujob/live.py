"""Live state: what the platforms report, normalised into one model for both of them."""

from __future__ import annotations

import hashlib
import json
from datetime import datetime
from typing import Any, Literal

from pydantic import Field

from gpujob.model import Model, Platform

ResourceKind = Literal[
    "pod",  # RunPod pod
    "machine",  # Paperspace Core machine
    "network_volume",  # RunPod network volume
    "public_ip",  # Paperspace claimed public IP (static)
    "snapshot",  # Paperspace snapshot
    "template",  # custom template (Paperspace) / template (RunPod)
    "registry_auth",  # RunPod container registry credential
    "shared_drive",  # Paperspace shared drive
    "cluster",  # RunPod Instant Cluster (its member pods bill as pods)
    "private_network",  # Paperspace private network (free; the machines of a multi-node job share one)
    "endpoint",  # RunPod serverless endpoint (workers.min bill around the clock)
    "startup_script",  # Paperspace startup script (free; gpujob's go with their machine)
]

# Normalised lifecycle status. Volumes, IPs and snapshots that exist are "available".
Status = Literal["pending", "running", "stopped", "terminating", "available", "unknown"]


class SSHEndpoint(Model):
    host: str
    port: int
    user: str = "root"


class LiveNode(Model):
    """One member of a multi-node job, in rank order (docs/multinode.md).

    RunPod: a member pod of the job's Instant Cluster (`cluster: {id, rank, ip}`); Paperspace: one of the
    job's machines in its private network (`privateIp`). Rank 0 is the rendezvous host."""

    rank: int = Field(ge=0, description="Node rank (NODE_RANK); 0 is the rendezvous host.")
    machine_id: str = Field(description="The member's pod id / machine id.")
    name: str = ""
    status: Status = Field(description="The same normalised status a single machine has.")
    raw_status: str = ""
    ssh: SSHEndpoint | None = None
    private_ip: str | None = Field(None, description="The address the other nodes reach it on.")
    interface: str | None = Field(
        None, description="The private interface's name (NCCL_SOCKET_IFNAME / GLOO_SOCKET_IFNAME)."
    )
    gpu_id: str | None = None
    gpu_count: int = 0
    cost_per_hour: float | None = None


def group_status(statuses: list[Status]) -> Status:
    """A multi-node job's one status from its members': running only when every node runs; any node on its
    way down or stopped makes the group so (a start makes it whole), any pending one makes it pending."""
    if not statuses:
        return "terminating"
    for word in ("terminating", "stopped", "pending", "unknown"):
        if word in statuses:
            return word  # type: ignore[return-value]
    return "running"


# A platform's own status words that its normaliser calls pending although the machine is on its way
# down, not up (Paperspace's `stopping`).
_GOING_DOWN = frozenset({"stopping"})


def booting(r: LiveResource) -> bool:
    """Pending on its way up (created, provisioning, starting, restarting, a migrated pod's first boot):
    it runs soon, and a launch waits for it to."""
    return r.status == "pending" and r.raw_status.lower() not in _GOING_DOWN


class LiveResource(Model):
    """One billable object as the platform reports it now."""

    platform: Platform
    kind: ResourceKind
    id: str
    name: str
    status: Status
    raw_status: str = Field(
        "", description="The platform's own status word (RUNNING, EXITED, off, ready, ...)."
    )
    gpu_id: str | None = Field(None, description="Platform GPU id / machineType.")
    gpu_count: int = 0
    region: str | None = None
    cloud: Literal["secure", "community"] | None = None
    spot: bool = False
    image: str | None = None
    template: str | None = None
    container_disk_gb: int | None = None
    volume_gb: int | None = Field(
        None, description="Pod volume disk / machine block storage / network volume size."
    )
    volume_tier: str | None = Field(None, description="network volume type: standard | high-performance")
    mount_path: str | None = None
    network_volume_id: str | None = None
    machine_id: str | None = Field(None, description="For IPs and snapshots: the machine they belong to.")
    public_ip: str | None = None
    public_ip_kind: Literal["static", "dynamic", "none"] | None = None
    auto_shutdown_hours: float | None = None
    ssh: SSHEndpoint | None = None
    cost_per_hour: float | None = Field(
        None, description="Current billed rate in USD/h as the API reports it."
    )
    created_at: datetime | None = None
    started_at: datetime | None = None
    attributes: dict[str, str | int | float | bool | None] = Field(default_factory=dict)
    nodes: list[LiveNode] = Field(
        default_factory=list,
        description="A cluster's (or a Paperspace private network's) member nodes in rank order; empty for "
        "everything else. Each member is also listed as its own pod or machine resource.",
    )

    @classmethod
    def available(
        cls, platform: Platform, kind: ResourceKind, id: str, name: str, **fields: Any
    ) -> LiveResource:
        """One with no lifecycle of its own (volume, IP, snapshot, template, ...): that it exists is its status."""
        return cls(platform=platform, kind=kind, id=id, name=name, status="available", **fields)


class PriceQuote(Model):
    """A live price read at plan time; the planner stays pure by receiving these."""

    platform: Platform
    gpu_id: str
    cloud: Literal["secure", "community"] | None = None
    spot: bool = False
    gpu_count: int = Field(
        1, description="The GPU count the availability was asked for (prices are per GPU)."
    )
    price_hour: float = Field(description="USD per GPU-hour.")
    available: bool | None = None
    source: str = Field(description="API call or profile the price came from.")
    as_of: datetime


class ResourceRef(Model):
    """A resource gpujob knows of, live or gone (its id is all the platform's billing data needs)."""

    platform: Platform
    kind: ResourceKind
    id: str
    created_at: datetime | None = None


class Span(Model):
    """A stretch of time the platform reports a machine running (from its own events)."""

    start: datetime
    end: datetime | None = Field(None, description="None: still running.")


class Metering(Model):
    """What a platform itself reports about money billed or time metered, per resource id.

    RunPod fills `billed` from its billing endpoints; Paperspace has none and fills `running` (on/off
    history from machine events) and `ended` (when a machine was destroyed). A resource missing from
    both is estimated by the cost engine and says so."""

    billed: dict[str, float] = Field(default_factory=dict, description="resource id -> USD billed so far.")
    billed_since: datetime | None = Field(None, description="Start of the billing window the amounts cover.")
    source: str = Field("", description="The calls the figures came from, with the date they were read.")
    running: dict[str, list[Span]] = Field(default_factory=dict, description="machine id -> running spans.")
    ended: dict[str, datetime] = Field(default_factory=dict, description="machine id -> destroyed at.")
    errors: list[str] = Field(default_factory=list)


class Account(Model):
    """Account-wide money facts, where the platform reports them (RunPod GraphQL `myself`)."""

    platform: Platform
    balance_usd: float | None = None
    spend_per_hour_usd: float | None = Field(None, description="The platform's own current spend rate.")
    spend_limit_usd: float | None = Field(None, description="Spend limit per hour, if the platform has one.")
    read_at: datetime
    source: str = ""


class TemplateRef(Model):
    """A machine template a plan resolves `machine.template` in (Paperspace OS and custom templates)."""

    platform: Platform
    id: str
    name: str
    kind: Literal["os", "custom"]
    region: str | None = Field(None, description="Custom templates live in one data center (PS5).")


RunState = Literal["running", "exited", "setup_failed", "lost", "not_started", "unknown"]


class RunFact(Model):
    """One job's run as read over SSH (plus what the local journal says), so the planner can see it.

    `state` None: not read over SSH (the machine is not running, or `plan --no-refresh-runs`);
    "unknown": a read was tried and failed (`reason` says why); "lost": started, not alive, no exit code
    (the container restarted or the process was killed)."""

    state: RunState | None = None
    reason: str = Field("", description="Why the state is unknown or was not read.")
    resource_id: str | None = Field(None, description="The machine the status was read from.")
    exit_code: int | None = None
    started_at: str | None = None
    last_checkpoint: str | None = None
    last_checkpoint_age_s: float | None = None
    checkpoint_dir: str | None = Field(
        None,
        description="Where the last run launched on this disk writes checkpoints (its launcher's record).",
    )
    launch_pending: bool = Field(
        False, description="Journal: a machine was created or started and no launch finished since."
    )
    finished_for_digest: bool = Field(
        False, description="Journal: the run was marked finished (exit 0) for this exact job file."
    )
    launched_digest: str | None = Field(
        None, description="Journal: digest of the job file the last launch was made from, if recorded."
    )
    push_from: str | None = Field(
        None,
        description="Journal: a replaced machine whose pulled checkpoints were not pushed onto its successor yet.",
    )
    first_step: int | None = Field(
        None, description="The first step this run reported (GPUJOB_PROGRESS_FILE): its resume point + 1."
    )
    earlier_last_step: int | None = Field(
        None,
        description="The last step the run before this one on the same disk reported (launcher history).",
    )
    earlier_span_s: float | None = Field(
        None, description="How long the run before this one kept reporting steps (its first to its last)."
    )
    # Left out of a dump when not read, so a plan of a run that says nothing of them keeps its shape.
    ended: str | None = Field(
        None,
        exclude_if=lambda v: v is None,
        description="What ended the run, read inside the machine (U3, gpujob.ssh.cgroup): killed: out of "
        "memory (limit X), machine rebooted, killed by a signal.",
    )
    earlier_ooms: int = Field(
        0, exclude_if=lambda v: not v, description="Consecutive runs before this one the cgroup OOM-killed."
    )
    finished_at: str | None = Field(
        None,
        exclude_if=lambda v: v is None,
        description="When the run exited (its launcher's record), for a run that ends far sooner than expected (LC4.3).",
    )


class LiveState(Model):
    """Everything read from the platforms for one plan."""

    read_at: datetime
    resources: list[LiveResource] = Field(default_factory=list)
    quotes: list[PriceQuote] = Field(default_factory=list)
    read_errors: list[str] = Field(default_factory=list)
    # Not part of fingerprint(): a run checkpoints every few minutes, which must not stale a saved plan.
    runs: dict[str, RunFact] = Field(default_factory=dict, description="Run facts per job name.")
    # Not part of fingerprint() either: a balance changes by the second.
    accounts: dict[str, Account] = Field(
        default_factory=dict,
        description="Balance and spend rate per platform, where the platform reports them.",
    )
    account_notes: list[str] = Field(
        default_factory=list,
        description="Account reads that failed, one line each: a note in the plan, never a reason to block it.",
    )
    templates: dict[str, list[TemplateRef]] = Field(
        default_factory=dict,
        description="Templates per platform, read when a job names one (absent: not read).",
    )
    spot_unavailable: dict[str, str] = Field(
        default_factory=dict,
        description="Platforms whose spot API is gone (RunPod's GraphQL answered 410 Gone), with why.",
    )

    def fingerprint(self) -> str:
        """sha256 of the resources and their states (not read_at, not prices): the stale-plan guard."""
        rows = sorted(
            (
                r.model_dump(mode="json", exclude={"cost_per_hour", "attributes", "ssh", "nodes"})
                for r in self.resources
            ),
            key=lambda r: (r["platform"], r["kind"], r["id"]),
        )
        return hashlib.sha256(json.dumps(rows, sort_keys=True).encode()).hexdigest()
