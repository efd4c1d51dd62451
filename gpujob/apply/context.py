"""The bottom of gpujob.apply: what one job's steps share while they run.

Everything in apply/ may import this module; it imports nothing of apply/ above the journal, the
progress hooks and the SSH seam. Layers, bottom up: context (with journal, records, progress, sshapi);
gate (pure checks) and runtime (the run over SSH, no context); ownership, capacity, teardown, carry
(each given a context); steps; applier; session. Nothing imports a layer above its own.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gpujob import naming
from gpujob.apply.journal import Journal
from gpujob.apply.progress import ApplyHooks, JobReporter
from gpujob.apply.sshapi import SSHApi
from gpujob.clock import Clock
from gpujob.jobfile.model import JobSpec
from gpujob.live import LiveResource
from gpujob.plan.capability import Capability
from gpujob.plan.model import Action
from gpujob.providers.base import Provider
from gpujob.state import StateRef

SWEEP_QUEUE = "sweep"  # JobContext.extra: the gpujob.layout.queues.Queue of a sweep's queue job
GPU_CEILING = "gpu_ceiling"  # JobContext.extra: the most its GPU may bill per hour (gpujob.plan.ceiling)


@dataclass
class JobContext:
    """Everything one job's steps share while they run."""

    spec: JobSpec
    spec_path: Path
    provider: Provider
    state_dir: StateRef  # the project's store (a Path: a local state directory)
    journal: Journal
    ssh: SSHApi
    clock: Clock
    env: Mapping[str, str]
    hooks: ApplyHooks
    approvals: set[str]
    rerun: str = "gpujob apply"  # the command line that repeats this one, for hints (gate.require_approved)
    project: str = ""  # gpujob.project id of state_dir: part of every name this job's resources get
    project_label: str = ""  # where that project lives (user@host:/path), written into pod env
    digest: str = ""  # the job file's digest (gpujob.spec.load): what the journal's run marks name
    machine: LiveResource | None = None
    volume: LiveResource | None = None
    moved: bool = False
    in_flight: set[str] = field(default_factory=set)  # steps a previous, killed apply left unfinished
    todo: list[Action] = field(default_factory=list)  # this apply's steps for the job, in order
    evidence: dict[str, Any] = field(default_factory=dict)  # volume id -> teardown_look.Evidence
    replaced: str | None = None  # id of the machine a REPLACE of this apply terminated
    capabilities: tuple[Capability, ...] | None = (
        None  # None: the installed ones  # what plugs into the steps (gpujob.plan.capability)
    )
    # Ids of every resource seen owned by the job during this apply (gpujob.naming): an IP or snapshot
    # stays the job's after this apply destroyed the machine it was owned through.
    owned_ids: set[str] = field(default_factory=set)
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def machine_name(self) -> str:
        return naming.machine_name(self.spec.name, self.project)

    @property
    def volume_name(self) -> str | None:
        nv = self.spec.storage.network_volume
        return naming.volume_name(self.spec.name, nv.name, self.project) if nv else None

    @property
    def note(self) -> JobReporter:
        """Call it for a note; runtime and capacity also draw transfers and waits through it."""
        return JobReporter(self.hooks, self.spec.name)

    @property
    def machine_kind(self) -> str:
        return naming.machine_kind_of(self.spec.platform, self.spec.machine.nodes)
