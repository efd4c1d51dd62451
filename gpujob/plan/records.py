"""Records gpujob keeps beside the job file, read by the planner.

pulls/<job>.json in the project's store (gpujob.state) holds the latest PullRecord of a job: what `pull`
fetched, from where, and whether each file was verified. The teardown gate reads it, and the planner
shows it next to destructive actions, each only for the machine or volume it was pulled from
(PullRecord.applies_to): the job's name outlives its resources. launches/<job>.json holds the LaunchRecord: what the job's machine
was created with that the platform does not report back.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from pydantic import Field

from gpujob.model import Model, Platform

if TYPE_CHECKING:
    from gpujob.state import StateRef


class PulledFile(Model):
    name: str = Field(description="Path relative to checkpoint.dir.")
    size: int
    sha256: str = Field(description="Checksum of the local copy.")
    remote_sha256: str | None = Field(None, description="Checksum computed on the remote before the pull.")
    verified: bool = Field(description="checkpoint.verify exited 0 on the local copy.")
    at: datetime
    local_path: str = ""
    verify_output: str = Field(
        "",
        description="When checkpoint.verify failed: the tail of its stderr (gpujob.verify.output_tail).",
    )

    @property
    def checksum_ok(self) -> bool:
        return self.remote_sha256 is not None and self.remote_sha256 == self.sha256


class PullRecord(Model):
    job: str
    platform: Platform
    resource_id: str | None = Field(None, description="Machine / pod the files were pulled from.")
    network_volume_id: str | None = Field(None, description="Network volume checkpoint.dir lives on, if any.")
    tier: str = Field("", description="Storage tier of checkpoint.dir (network_volume, volume_disk, ...).")
    remote_dir: str
    local_dir: str
    remote_files: dict[str, str] = Field(
        default_factory=dict,
        description="Remote listing taken when the pull began (minus files rotated away meanwhile): name -> sha256.",
    )
    files: list[PulledFile] = Field(default_factory=list)
    vanished: list[str] = Field(
        default_factory=list,
        description="Listed, then removed by the run (its `keep` rotation) before fetched.",
    )
    unpullable: dict[str, str] = Field(
        default_factory=dict, description="Remote entries that cannot be pulled safely: name -> why."
    )
    verify_command: str | None = None
    at: datetime
    before_stop: bool = Field(
        False,
        description="Taken by a stop of gpujob's after the run was stopped (gpujob.apply.stop_pull): "
        "nothing of the run was written after it.",
    )

    def file(self, name: str) -> PulledFile | None:
        return next((f for f in self.files if f.name == name), None)

    def missing(self) -> list[str]:
        """Remote files not pulled, or pulled with a different checksum."""
        out = []
        for name, digest in sorted(self.remote_files.items()):
            got = self.file(name)
            if got is None or got.sha256 != digest:
                out.append(name)
        return out

    def unverified(self) -> list[str]:
        return [f.name for f in self.files if f.name in self.remote_files and not f.verified]

    @property
    def complete(self) -> bool:
        return not self.missing() and not self.unverified() and not self.unpullable

    def applies_to(self, machine_id: str | None, volume_id: str | None) -> bool:
        """Whether this record is about the disk the job has now. A pull of checkpoint.dir on a network
        volume is about that volume (a later pod that mounts it sees the same files); any other pull is
        about the machine it came from. A deleted volume's or machine's record says nothing about its
        replacement, and a record that names neither is about nothing."""
        if self.tier == "network_volume" and self.network_volume_id is not None:
            return volume_id == self.network_volume_id
        return self.resource_id is not None and machine_id == self.resource_id


def current_record(record: Any, machine: Any, volumes: Sequence[Any] = ()) -> Any:
    """`record` when it is about the job's live machine or one of its live volumes (objects with .id, or
    their ids; None for none), else None. What is not a PullRecord passes as it is (the planner also
    reads plain dicts)."""
    if not isinstance(record, PullRecord):
        return record

    def ident(x: Any) -> str | None:
        return x if isinstance(x, str) or x is None else getattr(x, "id", None)

    vids = [ident(v) for v in volumes if v is not None] or [None]
    return record if any(record.applies_to(ident(machine), vid) for vid in vids) else None


def pulls_name(job: str) -> str:
    return f"pulls/{job}.json"


def load_pull_record(state: StateRef, job: str) -> PullRecord | None:
    from gpujob.state import as_store

    data = as_store(state).read(pulls_name(job))
    return None if data is None else PullRecord.model_validate_json(data)


def load_pull_records(state: StateRef) -> dict[str, PullRecord]:
    """Every job's latest pull record in a store, keyed by job name (for the planner)."""
    from gpujob.state import as_store

    store = as_store(state)
    out: dict[str, PullRecord] = {}
    for name in store.names("pulls/"):
        data = store.read(name)
        if data is None or not name.endswith(".json"):
            continue
        try:
            rec = PullRecord.model_validate_json(data)
        except ValueError:
            continue  # an unreadable record proves nothing; the gate then refuses for lack of one
        out[rec.job] = rec
    return out


def job_pull_records(loaded: Sequence[Any]) -> dict[str, PullRecord]:
    """Each loaded job's pull record from its project's store, read-only (planning creates nothing)."""
    from gpujob.state import open_store

    records: dict[str, PullRecord] = {}
    for ls in loaded:
        rec = load_pull_records(open_store(ls.path)).get(ls.spec.name)
        if rec is not None:
            records[ls.spec.name] = rec
    return records


def save_pull_record(state: StateRef, record: PullRecord) -> None:
    """Replaced atomically: a kill never leaves half a record."""
    from gpujob.state import as_store

    as_store(state).write(pulls_name(record.job), record.model_dump_json(indent=2).encode())


class RunRecord(Model):
    """What the run alive on a machine was launched with (gpujob.plan.run_diff compares it with the job
    file). Env values are kept as digests and secrets by name: the record says that a value changed,
    never what it was."""

    command: str
    setup: str | None = None
    env: dict[str, str] = Field(default_factory=dict, description="run.env: name -> sha256 of the value.")
    secrets: list[str] = Field(default_factory=list, description="run.secrets, by name only.")
    image: str | None = None
    sync_dest: str = ""
    checkpoint_dir: str | None = None
    checkpoint_interval_s: int | None = None
    checkpoint_keep: int | None = None
    detach: str = ""
    at: datetime


def value_digest(value: str) -> str:
    import hashlib

    return hashlib.sha256(value.encode()).hexdigest()[:16]


def run_record_of(spec: Any, at: datetime) -> RunRecord:
    from gpujob.layout.machine import checkpoint_interval_s

    run, ck = spec.run, spec.checkpoint
    return RunRecord(
        command=run.command,
        setup=run.setup,
        env={k: value_digest(v) for k, v in sorted(run.env.items())},
        secrets=sorted(run.secrets),
        image=spec.machine.image,
        sync_dest=run.sync.dest,
        checkpoint_dir=ck.dir if ck is not None else None,
        checkpoint_interval_s=checkpoint_interval_s(spec),
        checkpoint_keep=ck.keep if ck is not None else None,
        detach=run.detach,
        at=at,
    )


class LaunchRecord(Model):
    """What gpujob created a job's machine with that the platform never reports back (Paperspace machine
    objects carry no templateId and no diskSize): launches/<job>.json in the store, written at create and at
    every disk grow. The planner diffs template and disk size against it, never against storageTotal."""

    job: str
    platform: Platform
    resource_id: str
    template: str | None = Field(None, description="machine.template as the job file wrote it.")
    template_id: str | None = Field(None, description="The template id it resolved to.")
    disk_gb: int | None = Field(None, description="The disk size the machine was created (or grown) with.")
    run: RunRecord | None = Field(
        None, description="The run last launched on this machine, if gpujob launched it."
    )
    at: datetime

    def template_matches(self, wanted: str) -> bool:
        return wanted in (self.template, self.template_id)


def launches_name(job: str) -> str:
    return f"launches/{job}.json"


def save_launch_record(state: StateRef, record: LaunchRecord) -> None:
    from gpujob.state import write_model

    write_model(state, launches_name(record.job), record)


def load_launch_record(state: StateRef, job: str) -> LaunchRecord | None:
    """None for none or an unreadable one: the planner then does not diff those fields."""
    from gpujob.state import read_model

    return read_model(state, launches_name(job), LaunchRecord)


def note_launch(state_dir: StateRef, spec: Any, machine: Any, *, disk_gb: int | None = None) -> None:
    """Write the launch record of `spec`'s machine right after create (its template and disk), or with
    `disk_gb` after a disk grow (only the size changes)."""
    from datetime import UTC

    now = datetime.now(UTC)
    old = load_launch_record(state_dir, spec.name)
    if disk_gb is not None and old is not None and old.resource_id == machine.id:
        rec = old.model_copy(update={"disk_gb": disk_gb, "at": now})
    elif disk_gb is not None:  # a machine gpujob did not create: only the size it just set is known
        rec = LaunchRecord(
            job=spec.name, platform=spec.platform, resource_id=machine.id, disk_gb=disk_gb, at=now
        )
    else:
        rec = LaunchRecord(
            job=spec.name,
            platform=spec.platform,
            resource_id=machine.id,
            template=spec.machine.template,
            template_id=machine.template,
            disk_gb=machine.volume_gb,
            at=now,
        )
    save_launch_record(state_dir, rec)


def note_run(state_dir: StateRef, spec: Any, machine: Any, at: datetime) -> None:
    """After a launch started the run on `machine`: what it was launched with."""
    old = load_launch_record(state_dir, spec.name)
    run = run_record_of(spec, at)
    if old is not None and old.resource_id == machine.id:
        rec = old.model_copy(update={"run": run})
    else:  # a machine gpujob did not create (or a record lost): only the run is known
        rec = LaunchRecord(job=spec.name, platform=spec.platform, resource_id=machine.id, run=run, at=at)
    save_launch_record(state_dir, rec)


def job_launch_records(loaded: Sequence[Any]) -> dict[str, LaunchRecord]:
    """Each loaded job's launch record, read-only (planning creates nothing)."""
    from gpujob.state import open_store

    out: dict[str, LaunchRecord] = {}
    for ls in loaded:
        rec = load_launch_record(open_store(ls.path), ls.spec.name)
        if rec is not None:
            out[ls.spec.name] = rec
    return out


class DestroyRecord(Model):
    """destroyed/<job>.json: `gpujob destroy` tore the job down on purpose. Nothing creates it again
    (watch skips it, apply refuses) until `gpujob apply --recreate` says so: editing the job file is not
    enough. A terminate by a replace or a move to another platform writes none."""

    job: str
    at: datetime
    by: str = Field("", description="user@host that ran the destroy.")
    recreated_at: datetime | None = Field(None, description="When `gpujob apply --recreate` lifted it.")

    def describe(self) -> str:
        who = f" by {self.by}" if self.by else ""
        return f"destroyed at {self.at:%Y-%m-%d %H:%M} UTC{who}; `gpujob apply --recreate` brings it back"


def destroyed_name(job: str) -> str:
    return f"destroyed/{job}.json"


def note_destroyed(state: StateRef, job: str, at: datetime) -> None:
    import getpass
    import socket

    from gpujob.state import as_store

    try:
        by = f"{getpass.getuser()}@{socket.gethostname()}"
    except (OSError, KeyError):
        by = ""
    rec = DestroyRecord(job=job, at=at, by=by)
    as_store(state).write(destroyed_name(job), rec.model_dump_json(indent=2).encode())


def load_destroyed(state: StateRef, job: str) -> DestroyRecord | None:
    from gpujob.state import as_store

    data = as_store(state).read(destroyed_name(job))
    try:
        rec = None if data is None else DestroyRecord.model_validate_json(data)
    except ValueError:
        # An unreadable mark still says the job was destroyed on purpose: keep refusing.
        rec = DestroyRecord(job=job, at=datetime.fromtimestamp(0).astimezone())
    return rec if rec is not None and rec.recreated_at is None else None


def clear_destroyed(state: StateRef, job: str, at: datetime) -> None:
    """`gpujob apply --recreate`: the mark stays, with when it was lifted."""
    from gpujob.state import as_store

    rec = load_destroyed(state, job)
    if rec is not None:
        rec = rec.model_copy(update={"recreated_at": at})
        as_store(state).write(destroyed_name(job), rec.model_dump_json(indent=2).encode())


def step_of(name: str) -> int | None:
    """The step a checkpoint's file name carries: its last number (step_00000120.pt -> 120)."""
    found = re.findall(r"\d+", name.rsplit("/", 1)[-1])
    return int(found[-1]) if found else None


def recorded(loaded: Sequence[Any], monthly: Any) -> dict[str, Any]:
    """What the planner reads besides live state, for `plan`, `apply` and every watch tick alike: the
    jobs' pull and launch records and spend histories from their stores, with the project's month
    (`monthly`, gpujob.cost.monthly.Monthly): build_plan's and rederive's keyword arguments."""
    from gpujob.cost.history import job_histories

    return {
        "pull_records": job_pull_records(loaded),
        "launch_records": job_launch_records(loaded),
        "histories": job_histories(loaded),
        "monthly": monthly,
    }
