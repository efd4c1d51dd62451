"""The run section of a job file (run:): what to sync, set up and start, how it survives the SSH
session, and what gpujob knows of its work (total_steps, step_time) and its limits (max_runtime,
stall_after). Also the duration types every section uses. Re-exported by gpujob.jobfile.model.
"""

from __future__ import annotations

from typing import Literal

from pydantic import AwareDatetime, Field, field_validator

from gpujob.jobfile.durations import Duration, MeasuredDuration
from gpujob.jobfile.rules import checked_path as _checked_path
from gpujob.jobfile.rules import deny_patterns as _deny
from gpujob.jobfile.rules import env_names as _env
from gpujob.jobfile.rules import secret_names as _secrets
from gpujob.jobfile.rules import sync_src as _src
from gpujob.model import Model


class SyncSpec(Model):
    """Local code copied to the machine before each launch (rsync over SSH)."""

    src: str = Field(
        ".",
        description="Local directory to sync, relative to the job file; it must stay inside the project "
        "(the job file's folder, or the folder above jobs/ for jobs/*.yaml).",
    )
    dest: str = Field("/workspace/code", pattern=r"^/", description="Remote directory.")
    exclude: list[str] = Field(
        default_factory=list,
        description="Glob patterns not synced (.gitignore is honoured too). What gpujob pulls (checkpoint.pull_to, outputs.pull_to inside sync.src) is never sent back; a negation here (`!/checkpoints/`) sends it.",
    )
    deny: list[str] = Field(
        default_factory=list,
        description="More never-sync patterns, added to gpujob's credential deny list (.env, .ssh/, .aws/, "
        ".kube/, .docker/config.json, .npmrc, .pypirc, credentials.json, ...); no exclude or .gitignore "
        "negation re-includes them.",
    )

    @field_validator("src")
    @classmethod
    def _src_path(cls, value: str) -> str:
        return _src(value)  # where '..' leads is checked by the loader

    @field_validator("dest")
    @classmethod
    def _dest_path(cls, value: str) -> str:
        return _checked_path(value)

    @field_validator("deny")
    @classmethod
    def _deny_patterns(cls, value: list[str]) -> list[str]:
        return _deny(value)


class RunSpec(Model):
    """The training run: what to sync, set up and start, and how it survives the SSH session.
    The command's side (docs/job-file.md: "Your job's side of the contract"): on start, load the newest complete
    checkpoint holding the full state (model, optimizer, schedule, step, random generators, data
    position); checkpoint every GPUJOB_CHECKPOINT_INTERVAL seconds, atomically, keeping
    GPUJOB_CHECKPOINT_KEEP; on SIGTERM (a preemption or stop: ~5 s on RunPod spot) save once more if it
    fits and exit; exit 0 when finished."""

    sync: SyncSpec = Field(default_factory=SyncSpec, description="Code sync before each launch.")  # type: ignore[arg-type]
    setup: str | None = Field(
        None, description="Run once per fresh container (the container disk was wiped) before the command."
    )
    smoke: str | None = Field(
        None,
        description="A quick local check `gpujob apply` runs on this computer (CPU) before it creates or starts "
        "anything: in run.sync.src, with run.env, no secrets, and a temporary GPUJOB_CHECKPOINT_DIR "
        "(GPUJOB_SMOKE=1). A non-zero exit stops apply with its output. Never run by plan or watch.",
        examples=["TRAIN_STEPS=3 python3 train.py"],
    )
    smoke_timeout: Duration | None = Field(
        None, description="How long run.smoke may take before apply calls it failed (unset: 5m)."
    )
    command: str = Field(
        min_length=1,
        description="The training command (run in run.sync.dest); the same command starts fresh or resumes "
        "from the newest checkpoint in GPUJOB_CHECKPOINT_DIR.",
    )
    env: dict[str, str] = Field(
        default_factory=dict,
        description="Plain environment variables for the run (visible in plans and on the machine: no secrets). "
        "gpujob adds GPUJOB_JOB, GPUJOB_PROGRESS_FILE and the GPUJOB_CHECKPOINT_* variables.",
    )
    secrets: list[str] = Field(
        default_factory=list,
        description="Names of local env vars whose values are passed to the run over SSH at each launch, into its "
        "environment only: never into a file, a command line, a plan or a log. The run must not print them.",
    )
    caches: Literal["durable", "default"] = Field(
        "durable",
        description="durable: HF_HOME and PIP_CACHE_DIR point under the durable mount (<mount>/.cache/...), so "
        "downloads survive a stop and spare RunPod's small container disk; default: left as the image has them.",
    )
    detach: Literal["tmux", "nohup"] = Field("tmux", description="How the run outlives the SSH session.")
    launcher: Literal["torchrun", "none"] = Field(
        "none",
        description="How run.command starts on each node (docs/multinode.md). torchrun: gpujob runs `torchrun "
        "--nnodes=N --node-rank=R --nproc-per-node=G --rdzv-backend=c10d --rdzv-endpoint=ADDR:PORT` around the "
        "command, one process per GPU; none: the command itself, once per node. Either way the environment "
        "has MASTER_ADDR, MASTER_PORT, NODE_RANK, NNODES, GPUS_PER_NODE and WORLD_SIZE.",
    )
    rendezvous_port: int = Field(
        29500,
        ge=1024,
        le=65535,
        description="The port on node 0's private address the nodes meet on (MASTER_PORT; torchrun's default).",
    )
    max_runtime: Duration | None = Field(
        None,
        description="Longest the run may take; feeds cost projection and checks, and bounds the forecast's "
        "work when the steps are unknown.",
    )
    total_steps: int | None = Field(
        None,
        ge=1,
        le=10**12,
        description="The steps the run takes in all (the step it exits 0 at): with the step rate (the run's "
        "own, read from $GPUJOB_PROGRESS_FILE; else run.step_time) the P50/P90 forecast of cost and finish "
        "(docs/forecast.md).",
    )
    step_time: MeasuredDuration | None = Field(
        None,
        description="Time one step takes on machine.gpu's first type (a measurement, e.g. a short run's): "
        "the forecast's step rate until the run reports its own; other GPU types are scaled by "
        "profiles/throughput.yaml (an estimate, said so wherever it is used).",
        examples=["0.8s"],
    )
    deadline: AwareDatetime | None = Field(
        None,
        description="When the run must be done (ISO 8601 with a zone, e.g. 2026-12-09T18:00:00Z): plan picks, "
        "among the GPU types in machine.gpu and, with machine.spot: prefer, spot or on-demand, the cheapest "
        "whose P90 finish meets it (run.total_steps needed), judges the fallback platforms' machines too, and "
        "says why the others were not chosen; only a fallback meets it: an error naming it. A stopped "
        "(preempted) machine whose resume would miss it is replaced by one that meets it.",
        examples=["2026-12-09T18:00:00Z"],
    )
    stall_after: Duration | None = Field(
        None,
        description="Park the job when, while its machine bills, the run writes no new checkpoint step and "
        "no new log line for this long, or (where nvidia-smi exists) its GPU reads 0 % with no new step or "
        "checkpoint for this long: watch and the on-box agent quiesce, pull and stop it.",
        examples=["30m"],
    )

    @field_validator("env")
    @classmethod
    def _env_names(cls, value: dict[str, str]) -> dict[str, str]:
        return _env(value)

    @field_validator("secrets")
    @classmethod
    def _secret_names(cls, value: list[str]) -> list[str]:
        return _secrets(value)
