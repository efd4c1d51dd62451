"""The plan is a value: built by the planner, read by renderers and the applier, saved as JSON."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Any, Literal

from pydantic import Field, ValidationError, model_validator

from gpujob.cost.forecast import Forecast
from gpujob.cost.model import Billing
from gpujob.live import RunFact
from gpujob.model import Model, Platform, SourceRef
from gpujob.plan.sweep_model import SweepPlan


class ActionKind(StrEnum):
    NOOP = "no-op"
    CREATE = "create"  # pod / machine / network volume / public ip
    UPDATE = "update"  # in place (e.g. grow a volume, rename)
    REPLACE = "replace"  # terminate + create, because a field cannot be updated
    START = "start"
    STOP = "stop"
    TERMINATE = "terminate"  # RunPod pod terminate / Paperspace machine destroy
    DELETE_VOLUME = "delete-volume"
    RELEASE_IP = "release-ip"
    DELETE_SNAPSHOT = "delete-snapshot"
    PULL = "pull"  # pull + verify checkpoints before a destructive step
    PUSH = "push"  # carry pulled checkpoints onto a replaced machine's new storage, before its run starts
    LAUNCH = "launch"  # sync code and (re)start the run over SSH
    RELAUNCH = "relaunch"  # the run alive was launched differently: quiesce it, then launch it again
    MOVE = "move"  # run the job on its next platform (gpujob.failover): create, push, verify, launch, resume


# Actions that destroy data or keep money flowing irreversibly: they pass the teardown gate.
GATED: frozenset[ActionKind] = frozenset(
    {
        ActionKind.TERMINATE,
        ActionKind.REPLACE,
        ActionKind.DELETE_VOLUME,
        ActionKind.RELEASE_IP,
        ActionKind.DELETE_SNAPSHOT,
    }
)

Severity = Literal["error", "warning", "info"]


class Finding(Model):
    """A platform trap the spec or an action walks into. Errors block apply."""

    code: str = Field(description="Gotcha id (RP3, PS2, ...) or a gpujob check id (budget, secrets, ...).")
    severity: Severity
    summary: str
    detail: str = ""
    fix: str = ""
    job: str | None = None
    action_id: str | None = None
    source: SourceRef | None = None


class FieldChange(Model):
    path: str
    before: str | int | float | bool | list[str] | None = None
    after: str | int | float | bool | list[str] | None = None
    forces_replacement: bool = False


class DataEffect(Model):
    """Data consequence of one action, from the survival matrix."""

    wipes: list[str] = Field(default_factory=list, description="Storage tiers this action erases.")
    irreversible: bool = False
    checkpoint_safe: bool | None = Field(
        None, description="Whether checkpoint.dir is on a tier that survives this action."
    )
    summary: str = ""


class Action(Model):
    id: str = Field(description="Stable id, e.g. 'bert-finetune.pod.terminate'; used by --approve.")
    job: str
    platform: Platform
    kind: ActionKind
    resource_kind: str
    resource_name: str
    resource_id: str | None = None
    reasons: list[str] = Field(default_factory=list)
    changes: list[FieldChange] = Field(default_factory=list)
    drift: bool = Field(False, description="True when this action corrects a change made outside gpujob.")
    billing: Billing = Field(default_factory=Billing)
    data: DataEffect = Field(default_factory=DataEffect)
    findings: list[Finding] = Field(default_factory=list)
    depends_on: list[str] = Field(default_factory=list)
    gated: bool = Field(
        False,
        description="Whether the teardown gate applies: always exactly `kind` in terminate, replace, "
        "delete-volume, release-ip, delete-snapshot. Derived from the kind; a file saying otherwise is refused.",
    )

    @model_validator(mode="before")
    @classmethod
    def _gated_default(cls, data: Any) -> Any:
        if isinstance(data, dict) and "gated" not in data:
            kind = data.get("kind")
            if kind in set(ActionKind):  # an unknown kind: the field validation names it
                data = {**data, "gated": ActionKind(kind) in GATED}
        return data

    @model_validator(mode="after")
    def _gated_follows_kind(self) -> Action:
        want = self.kind in GATED
        if self.gated != want:
            raise ValueError(
                f"action {self.id}: gated is {str(self.gated).lower()}, but a {self.kind.value} action is "
                f"{'always' if want else 'never'} gated (gated follows the action kind, never the file)"
            )
        return self


class Cadence(Model):
    """Checkpoint cadence advice (Young/Daly)."""

    interval_s: float
    optimal_s: float | None = None
    mtbf_s: float | None = None
    write_time_s: float | None = None
    expected_loss_per_preemption_s: float | None = None
    summary: str = ""


class RunEstimate(Model):
    """A run with run.max_runtime: the most it costs by then at the job's running rate (gpujob watch parks
    it at run.max_runtime), and what its machine does when the run ends before."""

    usd: float
    hours: float
    usd_per_hour: float
    on_finish: str = Field(description="teardown.on_finish: keep leaves the machine running after the run.")


class JobPlan(Model):
    job: str
    platform: Platform
    spec_file: str
    desired_state: str
    actions: list[Action] = Field(default_factory=list)
    findings: list[Finding] = Field(default_factory=list, description="Findings about the spec itself.")
    cadence: Cadence | None = None
    running_usd_per_hour: float = 0.0
    parked_usd_per_month: float = 0.0
    current_usd_per_hour: float = 0.0
    after_usd_per_hour: float = Field(
        0.0, description="What the job bills per hour once the plan is applied."
    )
    run: RunFact | None = Field(
        None, description="The run fact this job was planned from (None: the job has no run to read)."
    )
    sweep: SweepPlan | None = Field(
        None, description="When this job is a queue of a sweep: its cells and cost (null otherwise)."
    )
    run_estimate: RunEstimate | None = Field(
        None,
        exclude_if=lambda v: v is None,
        description="A job to run with run.max_runtime: its cost at most by then (absent otherwise).",
    )
    forecast: Forecast | None = Field(
        None,
        exclude_if=lambda v: v is None,
        description="Cost and finish at P50 and P90 with the inputs they came from, for a running job with "
        "run.total_steps (absent otherwise; docs/forecast.md).",
    )


class Plan(Model):
    format_version: Literal[1] = 1
    origin: Literal["plan", "audit-fix"] = Field(
        "plan",
        description="What made it: `gpujob plan` or `gpujob audit --fix`. `gpujob apply PLAN` re-derives the "
        "plan the same way from the job files and live state and refuses it unless both agree.",
    )
    created_at: datetime
    gpujob_version: str
    spec_digest: str = Field(description="sha256 of the job files this plan was made from.")
    live_fingerprint: str = Field(description="sha256 of live state read for this plan (stale-plan guard).")
    jobs: list[JobPlan] = Field(default_factory=list)
    replace: list[str] = Field(
        default_factory=list,
        description="--replace addresses it was made with (<job>.run relaunches the run, <job>.pod / "
        "<job>.machine recreates the machine); `gpujob apply PLAN` re-derives with the same.",
    )
    fresh: bool = Field(
        False, description="--fresh: a machine created on a new disk starts without the local checkpoints."
    )
    release_left: bool = Field(
        False,
        description="--release-left: what a job with fallback entries left on the platforms it no longer "
        "runs on is deleted, each resource a gated action <job>.left.<platform>.<resource>.<kind>.",
    )

    def all_actions(self) -> list[Action]:
        return [a for j in self.jobs for a in j.actions]

    def all_findings(self) -> list[Finding]:
        out = [f for j in self.jobs for f in j.findings]
        out += [f for a in self.all_actions() for f in a.findings]
        return out

    @property
    def has_changes(self) -> bool:
        return any(a.kind is not ActionKind.NOOP for a in self.all_actions())

    @property
    def blocked(self) -> bool:
        return any(f.severity == "error" for f in self.all_findings())


def plan_problem(exc: ValidationError) -> str:
    """Why a saved file is not a Plan, in one line: the first problem with where it is (`jobs.0.id: ...`)."""
    first = exc.errors()[0]
    where = ".".join(str(x) for x in first["loc"])
    what = str(first["msg"]).removeprefix("Value error, ")
    return f"{where}: {what}" if where else what
