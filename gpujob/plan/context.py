"""What the planner knows about one job while it builds that job's actions.

JobContext gathers the spec, the job's own live resources, the profile and the current billing
footprint; planner.py mutates `fp` as it appends actions so every action's billing reads the state it
leaves behind. Tier helpers answer "which storage tier does this path live on" from the profile.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol

from gpujob import naming
from gpujob.cost.live import Pricing
from gpujob.cost.live import gpu_rate as live_gpu_rate
from gpujob.cost.rates import Footprint, GpuRate, gpu_rate, offer_for, quote_available
from gpujob.jobfile.model import JobSpec
from gpujob.live import LiveResource, LiveState
from gpujob.plan.capability import Capability
from gpujob.plan.model import Action, Finding, Severity, SourceRef
from gpujob.profile import Profile


class SpecSource(Protocol):
    """What the planner needs of gpujob.spec.load.LoadedSpec."""

    spec: JobSpec
    path: Path
    digest: str
    project: str | None

    def source(self, key_path: str) -> SourceRef | None: ...


MACHINE_KIND = {"runpod": "pod", "paperspace": "machine"}
TEARDOWN_VERB = {"runpod": "terminate", "paperspace": "destroy"}


@dataclass
class JobContext:
    loaded: SpecSource
    profile: Profile
    live: LiveState
    now: datetime
    env: Mapping[str, str]
    pull_record: Any = None
    launch_record: Any = None  # apply.records.LaunchRecord of the job, if one was written
    last_pull: Any = None  # the job's pull record, whatever disk it came from (what seeds a fresh one)
    fresh: bool = False  # --fresh: a new disk starts without the local checkpoints
    replace: set[str] = field(default_factory=set)  # --replace addresses of this job (gpujob.plan.replace)
    machine: LiveResource | None = None
    volume: LiveResource | None = None
    stale_volumes: list[LiveResource] = field(default_factory=list)
    ips: list[LiveResource] = field(default_factory=list)
    snapshots: list[LiveResource] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    actions: list[Action] = field(default_factory=list)
    fp: Footprint = field(default_factory=Footprint)
    desired_gpu: GpuRate | None = None
    desired_gpu_alias: str | None = None
    spot_choice: bool | None = None  # run.deadline's pick of spot or on-demand (None: machine.spot decides)
    deadline_replan: str = ""  # why run.deadline replaces a stopped machine (gpujob.plan.deadline._replan)
    template: Any = None  # machine.template resolved at plan time (gpujob.plan.template_findings)
    capabilities: tuple[Capability, ...] | None = (
        None  # None: the installed ones  # what plugs into this plan (gpujob.plan.capability)
    )

    @property
    def spec(self) -> JobSpec:
        return self.loaded.spec

    @property
    def job(self) -> str:
        return self.spec.name

    @property
    def project(self) -> str:
        project = self.loaded.project
        if project is None:
            raise ValueError(f"job {self.job}: no project id (gpujob.project.with_projects sets it)")
        return project

    @property
    def machine_name(self) -> str:
        """The name the job's pod / machine has (or gets)."""
        return naming.machine_name(self.job, self.project)

    @property
    def volume_name(self) -> str | None:
        nv = self.spec.storage.network_volume
        return naming.volume_name(self.job, nv.name, self.project) if nv else None

    @property
    def spot_gone(self) -> str | None:
        """Why this job's platform can no longer create or resume spot pods, if it cannot."""
        return self.live.spot_unavailable.get(self.spec.platform)

    @property
    def spot(self) -> bool:
        """Whether a create or resume planned now is spot: `spot: true` always (a finding blocks it when the
        platform has no spot any more), `prefer` only where RunPod still offers spot."""
        if self.spot_choice is not None:  # run.deadline chose (gpujob.plan.deadline)
            return self.spot_choice
        want = self.spec.machine.spot
        if self.spec.platform != "runpod":
            return False
        return want is True or (want == "prefer" and self.spot_gone is None)

    @property
    def machine_kind(self) -> str:
        return naming.machine_kind_of(self.spec.platform, self.spec.machine.nodes)

    @property
    def teardown_verb(self) -> str:
        return TEARDOWN_VERB[self.spec.platform]

    def finding(
        self,
        code: str,
        severity: Severity,
        summary: str,
        *,
        detail: str = "",
        fix: str = "",
        key: str | None = None,
        action_id: str | None = None,
    ) -> Finding:
        source = self.loaded.source(key) if key else None
        return Finding(
            code=code,
            severity=severity,
            summary=summary,
            detail=detail,
            fix=fix,
            job=self.job,
            action_id=action_id,
            source=source,
        )

    # --- GPU ---------------------------------------------------------------------------------

    def choose_gpu(self) -> None:
        """The first GPU candidate with a price, not reported out of stock, under max_price_per_hour."""
        m = self.spec.machine
        rates: list[tuple[str, GpuRate]] = []
        for alias in m.gpu:
            r = gpu_rate(
                self.profile, self.live.quotes, alias, count=m.gpu_count, cloud=m.cloud, spot=self.spot
            )
            if r is not None:
                rates.append((alias, r))
        for alias, r in rates:
            if (
                quote_available(
                    self.profile, self.live.quotes, alias, self.spot, cloud=m.cloud, count=m.gpu_count
                )
                is False
            ):
                continue
            if m.max_price_per_hour is not None and r.usd_per_hour > m.max_price_per_hour:
                continue
            self.desired_gpu_alias, self.desired_gpu = alias, r
            return
        if rates:
            self.desired_gpu_alias, self.desired_gpu = rates[0]

    def live_gpu_alias(self, resource: LiveResource) -> str | None:
        if resource.gpu_id is None:
            return None
        found = offer_for(self.profile, resource.gpu_id)
        return found[0].alias if found else resource.gpu_id

    def pricing(self) -> Pricing:
        """The cost engine's view of this read: quotes, and every machine (snapshots are sized by theirs)."""
        machines = {r.id: r for r in self.live.resources if r.kind in ("pod", "machine")}
        return Pricing(
            profile=self.profile, quotes=self.live.quotes, machines=machines, read_at=self.live.read_at
        )

    def live_gpu_rate(self, resource: LiveResource) -> GpuRate | None:
        """What a live machine's GPUs bill: the cost engine's rate (the API's own while it runs)."""
        return live_gpu_rate(self.pricing(), resource)


# --- storage tiers ---------------------------------------------------------------------------


def _under(path: str, mount: str) -> bool:
    mount = mount.rstrip("/") or "/"
    return path == mount or path.startswith(mount + "/") or mount == "/"


def path_tier(spec: JobSpec, path: str) -> str:
    """The profile tier id a remote path lives on."""
    if spec.platform == "paperspace":
        return "block_storage"
    storage = spec.storage
    if _under(path, storage.mount):
        nv = storage.network_volume
        if nv is not None:
            return "network_volume_hp" if nv.tier == "high-performance" else "network_volume"
        if storage.volume_gb:
            return "volume_disk"
    return "container_disk"


def tiers_in_use(spec: JobSpec, fp: Footprint) -> list[str]:
    if spec.platform == "paperspace":
        return ["block_storage"] if fp.machine else []
    out = []
    if fp.machine:
        out.append("container_disk")
        if fp.volume_gb:
            out.append("volume_disk")
    return out


def tier_title(profile: Profile, tier_id: str) -> str:
    """Short lower-case name: 'container disk', 'volume disk', 'network volume', 'core block storage'."""
    try:
        return profile.tier(tier_id).title.split(" (")[0].lower()
    except KeyError:
        return tier_id.replace("_", " ")


def live_ck_tier(ctx: JobContext) -> str | None:
    """The tier checkpoint.dir is on for the machine that exists now (the spec may already describe
    the machine that replaces it: a new network volume holds nothing yet)."""
    ck, m = ctx.spec.checkpoint, ctx.machine
    if ck is None:
        return None
    tier = path_tier(ctx.spec, ck.dir)
    if m is None or ctx.spec.platform != "runpod" or tier == "container_disk":
        return tier
    if tier.startswith("network_volume") and m.network_volume_id is None:
        return "volume_disk" if m.volume_gb else "container_disk"
    if not tier.startswith("network_volume") and m.network_volume_id is not None:
        return "network_volume"
    return tier


def run_record(ctx: JobContext) -> Any:
    """The record of the run launched on the job's machine, or None (launched before gpujob kept one,
    by hand, or on another machine)."""
    rec, m = ctx.launch_record, ctx.machine
    if rec is None or m is None or rec.resource_id != m.id:
        return None
    return getattr(rec, "run", None)
