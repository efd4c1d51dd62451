"""JobSpec: the desired state a user keeps in job.yaml. This is the product's main interface.

Names and meanings here are a contract with users: fields may be added, never renamed.
Platform-specific rules (which options exist where, value ranges, GPU and region names) are checked
against the platform profile by `gpujob.spec.checks`, not here, so the profile stays the one source.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator, model_validator

from gpujob.jobfile.durations import Duration as Duration
from gpujob.jobfile.durations import MeasuredDuration as MeasuredDuration
from gpujob.jobfile.machine import MachineSpec as MachineSpec

# The rules themselves need no pydantic (gpujob.jobfile.rules); they are importable from here too.
from gpujob.jobfile.rules import _MAX_DURATION_S as _MAX_DURATION_S
from gpujob.jobfile.rules import _UNIT_SECONDS as _UNIT_SECONDS
from gpujob.jobfile.rules import ENV_NAME_PATTERN as ENV_NAME_PATTERN
from gpujob.jobfile.rules import (
    NAME_MAX,
    NAME_PATTERN,
    auto_interval_problem,
    launcher_problem,
    parked_problem,
)
from gpujob.jobfile.rules import checked_path as _checked_path
from gpujob.jobfile.rules import env_value_problem as env_value_problem
from gpujob.jobfile.rules import format_duration as format_duration
from gpujob.jobfile.rules import output_paths as _output_paths
from gpujob.jobfile.rules import parse_duration as parse_duration
from gpujob.jobfile.rules import parse_measured as parse_measured
from gpujob.jobfile.rules import path_problem as path_problem
from gpujob.jobfile.rules import secret_name_problem as secret_name_problem
from gpujob.jobfile.rules import verify_command as _verify
from gpujob.jobfile.run import RunSpec as RunSpec
from gpujob.jobfile.run import SyncSpec as SyncSpec
from gpujob.jobfile.sweep import SweepSpec
from gpujob.model import Model, Platform


class NetworkVolumeSpec(Model):
    """A RunPod Network Volume: survives terminate, shared within one data center."""

    name: str = Field(
        pattern=NAME_PATTERN,
        max_length=NAME_MAX,
        description="Volume name; created as gpujob-<job>--<name>--<project>.",
    )
    size_gb: int = Field(ge=10, le=4096, description="Size in GB (10–4096). Grow-only: it can never shrink.")
    tier: Literal["standard", "high-performance"] = Field(
        "standard",
        description="standard ($0.07/GB/mo) or high-performance (~3× throughput, $0.14/GB/mo). Fixed at create.",
    )


class StorageSpec(Model):
    """Durable storage: the per-machine volume (RunPod volume disk / Paperspace block storage) or a Network Volume."""

    volume_gb: int | None = Field(
        None, ge=0, le=2000, description="RunPod per-pod volume disk / Paperspace block storage size in GB."
    )
    mount: str = Field("/workspace", pattern=r"^/", description="Where the durable volume is mounted.")
    network_volume: NetworkVolumeSpec | None = Field(
        None, description="RunPod only: a Network Volume mounted at `mount`."
    )

    @field_validator("mount")
    @classmethod
    def _mount_path(cls, value: str) -> str:
        return _checked_path(value)


class CheckpointSpec(Model):
    """Where checkpoints are written, how often, and how they come home before a teardown. The run is
    told through its environment (GPUJOB_CHECKPOINT_DIR / _INTERVAL / _KEEP); writing, resuming and
    pruning are the run's side of the contract (docs/job-file.md: "Your job's side of the contract")."""

    dir: str = Field(
        pattern=r"^/",
        description="Remote checkpoint directory, given to the run as GPUJOB_CHECKPOINT_DIR (created before it "
        "starts); must be on a tier that survives the teardown verb. Write each checkpoint atomically: a "
        "temporary name (*.tmp or a dot-name, which gpujob never pulls), flushed, then renamed into place.",
    )
    interval: Duration | Literal["auto"] = Field(
        "auto",
        description="Checkpoint cadence, given to the run as GPUJOB_CHECKPOINT_INTERVAL (whole seconds); "
        "`auto` = Young/Daly sqrt(2 · mtbf · write_time).",
    )
    mtbf: Duration | None = Field(None, description="Expected time between interruptions (for `auto`).")
    write_time: MeasuredDuration | None = Field(
        None, description="Time to write one checkpoint (for `auto`); a measurement, so it may be under 1s."
    )
    keep: int = Field(
        3,
        ge=1,
        le=1000,
        description="Checkpoints kept on the remote, given to the run as GPUJOB_CHECKPOINT_KEEP: the run deletes "
        "older ones itself, after the new one is in place.",
    )
    pull_to: str = Field("./checkpoints", description="Local destination of `gpujob pull`.")
    verify: str | None = Field(
        None,
        description="Local load check run on each pulled checkpoint, from the job file's directory; {file} is "
        "replaced by its path. Exit 0 = loads; otherwise its stderr is shown and the teardown gate refuses.",
    )
    size_gb: float | None = Field(
        None, gt=0, le=100_000, description="Expected checkpoint size, for the flush-in-grace check."
    )
    writers: Literal["rank0", "all"] = Field(
        "rank0",
        description="Which nodes of a multi-node job write checkpoints: rank0 (node 0 only) or all (every node "
        "its own shard). A step is complete when every writer has it; pulls take every writer's files.",
    )
    pull: Literal["continuous", "on_finish", "never"] = Field(
        "on_finish",
        description="When `gpujob watch` pulls: continuous (each new checkpoint, verified, while the run goes), "
        "on_finish (once the run exits 0 or is parked) or never. A teardown still pulls first: the gate needs it.",
    )

    @field_validator("dir")
    @classmethod
    def _dir_path(cls, value: str) -> str:
        return _checked_path(value)

    @field_validator("pull_to")
    @classmethod
    def _pull_to_path(cls, value: str) -> str:
        return _checked_path(value, local=True)

    @field_validator("verify")
    @classmethod
    def _verify_placement(cls, value: str | None) -> str | None:
        return _verify(value)


class OutputsSpec(Model):
    """Results outside checkpoint.dir (eval outputs, metrics, samples) that the teardown gate protects
    like checkpoints: pulled and checked by sha256 before any destroy, listed again right before it."""

    paths: list[str] = Field(
        min_length=1,
        description="Directories, files or globs on the machine (e.g. /workspace/results, "
        "/workspace/eval/*.json); each must be on a disk that survives a stop (under storage.mount on RunPod).",
    )
    pull_to: str = Field(
        "./outputs",
        description="Local destination: a file lands at pull_to/<its path on the machine without the leading />. "
        "The run's log and gpujob's run records land in pull_to/.gpujob/ at teardown.",
    )

    @field_validator("paths")
    @classmethod
    def _output_paths(cls, value: list[str]) -> list[str]:
        return _output_paths(value)

    @field_validator("pull_to")
    @classmethod
    def _pull_to_path(cls, value: str) -> str:
        return _checked_path(value, local=True)


class TeardownSpec(Model):
    """What happens to the machine when the run finishes."""

    on_finish: Literal["keep", "stop", "terminate"] = Field(
        "keep",
        description="What to do when the command exits 0. stop is done on a RunPod pod itself as the run "
        "ends (runpodctl, no account key on it), and by apply/watch; terminate still passes the teardown gate.",
    )
    on_failure: Literal["keep", "stop"] = Field(
        "keep",
        description="What to do when the command exits non-zero on its own (never after a signal: a "
        "preemption or gpujob's own stop). stop is done on a RunPod pod itself, so a failed run stops billing.",
    )


class BudgetSpec(Model):
    """Spending limits checked at plan time."""

    max_hourly_usd: float | None = Field(
        None,
        gt=0,
        le=1000,
        description="Refuse a plan whose running rate exceeds this (at most 1000): the sum over everything "
        "the job file leaves billing per hour (every queue of a sweep; a move's machine, storage and IP "
        "there plus what stays billing where it was). A failover or a sweep's queue count never chooses more.",
    )
    max_total_usd: float | None = Field(
        None,
        gt=0,
        le=10_000_000,
        description="The most the job may spend in all: plan refuses a start whose spend so far plus the "
        "P50 forecast crosses it (and warns at P90); watch, and a RunPod pod itself, park the job before "
        "the meter crosses it (docs/forecast.md).",
    )


class FallbackSpec(Model):
    """Another platform the job may move to when its own cannot serve it (gpujob.failover). Only the
    platform-specific blocks: checkpoint, outputs, run and budget are the job's own, shared by every entry."""

    platform: Platform = Field(description="runpod or paperspace.")
    machine: MachineSpec = Field(description="The GPU machine wanted there (replaces the job's machine).")
    storage: StorageSpec = Field(default_factory=StorageSpec, description="Durable storage there.")  # type: ignore[arg-type]


class JobSpec(Model):
    """A gpujob job file (job.yaml)."""

    version: Literal[1] = Field(description="File format version; always 1.")
    name: str = Field(
        pattern=NAME_PATTERN,
        max_length=NAME_MAX,
        description="Job name; its resources are named gpujob-<name>--<project> (volumes gpujob-<name>--<volume>--<project>).",
    )
    platform: Platform = Field(description="runpod or paperspace.")
    state: Literal["running", "stopped", "parked", "absent"] = Field(
        "running",
        description="Desired state. parked: the cheapest state that keeps the checkpoints on the platform "
        "(RunPod: pod terminated, network volume kept; Paperspace: machine off).",
    )
    machine: MachineSpec = Field(description="The GPU machine wanted.")
    storage: StorageSpec = Field(default_factory=StorageSpec, description="Durable storage.")  # type: ignore[arg-type]
    checkpoint: CheckpointSpec | None = Field(
        None, description="Checkpointing; unset = the run keeps no checkpoints."
    )
    run: RunSpec | None = Field(
        None, description="The training run; unset = the machine is created but nothing is launched."
    )
    outputs: OutputsSpec | None = Field(
        None,
        description="Results besides checkpoints that must come home before any teardown; unset = only "
        "checkpoints (and the run's log, always pulled at teardown into ./outputs/.gpujob/).",
    )
    teardown: TeardownSpec = Field(
        default_factory=TeardownSpec, description="What to do when the run finishes."
    )
    budget: BudgetSpec = Field(default_factory=BudgetSpec, description="Spending limits.")
    fallback: list[FallbackSpec] = Field(
        default_factory=list,
        description="Other platforms, in order, the job may move to when its own cannot serve it (no capacity "
        "on any candidate, over the price cap): each entry's platform, machine and storage replace the job's; "
        "the newest locally verified checkpoint is carried over. Each entry is validated as a whole job.",
    )
    failover: Literal["ask", "auto", "never"] = Field(
        "ask",
        description="When `gpujob watch` finds the job cannot be served where it runs: ask (print the approval "
        "line `--approve <job>.move` and wait), auto (move unattended; needs checkpoint.pull: continuous and "
        "a price cap) or never (wait).",
    )
    failover_after: int = Field(
        3, ge=1, le=100, description="Failed starts on the current platform after which it cannot serve."
    )
    failback: Literal["never", "auto"] = Field(
        "never",
        description="auto: move back to the first platform when it can serve again, right after a checkpoint "
        "was pulled and verified.",
    )
    sweep: SweepSpec | None = Field(
        None,
        description="Run run.command once per cell of a matrix, the cells split over several queue machines "
        "(docs/sweeps.md); unset = one run.",
    )

    @model_validator(mode="after")
    def _auto_needs_inputs(self) -> JobSpec:
        ck = self.checkpoint
        problem = auto_interval_problem(ck.interval, ck.mtbf, ck.write_time) if ck is not None else None
        if problem:
            raise ValueError(problem)
        return self

    @model_validator(mode="after")
    def _parked_keeps_checkpoints(self) -> JobSpec:
        ck = self.checkpoint
        problem = parked_problem(
            self.state,
            self.platform,
            self.storage.network_volume,
            self.storage.mount,
            ck.dir if ck is not None else None,
        )
        if problem:
            raise ValueError(problem)
        return self

    @model_validator(mode="after")
    def _launcher_once(self) -> JobSpec:
        problem = launcher_problem(self.run.launcher, self.run.command) if self.run is not None else None
        if problem:
            raise ValueError(problem)
        return self
