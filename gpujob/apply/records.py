"""Records gpujob keeps beside the job file, read by the planner.

<state>/pulls/<job>.json holds the latest PullRecord of a job: what `pull` fetched, from where, and
whether each file was verified. The teardown gate reads it, and the planner shows it next to
destructive actions. <state>/launches/<job>.json holds the LaunchRecord: what the job's machine was
created with that the platform does not report back.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from pydantic import Field

from gpujob.model import Model, Platform


class PulledFile(Model):
    name: str = Field(description="Path relative to checkpoint.dir.")
    size: int
    sha256: str = Field(description="Checksum of the local copy.")
    remote_sha256: str | None = Field(None, description="Checksum computed on the remote before the pull.")
    verified: bool = Field(description="checkpoint.verify exited 0 on the local copy.")
    at: datetime
    local_path: str = ""

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
        default_factory=dict, description="Remote listing taken before the pull: name -> sha256."
    )
    files: list[PulledFile] = Field(default_factory=list)
    verify_command: str | None = None
    at: datetime

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
        return not self.missing() and not self.unverified()


def pulls_path(state_dir: Path, job: str) -> Path:
    return state_dir / "pulls" / f"{job}.json"


def load_pull_record(state_dir: Path, job: str) -> PullRecord | None:
    try:
        return PullRecord.model_validate_json(pulls_path(state_dir, job).read_text())
    except FileNotFoundError:
        return None


def load_pull_records(state_dir: Path) -> dict[str, PullRecord]:
    """Every job's latest pull record in a state dir, keyed by job name (for the planner)."""
    out: dict[str, PullRecord] = {}
    folder = state_dir / "pulls"
    if not folder.is_dir():
        return out
    for path in sorted(folder.glob("*.json")):
        try:
            rec = PullRecord.model_validate_json(path.read_text())
        except ValueError:
            continue  # an unreadable record proves nothing; the gate then refuses for lack of one
        out[rec.job] = rec
    return out


def _state_dir_of(ls: Any) -> Path:
    override = os.environ.get("GPUJOB_STATE_DIR")
    return Path(override) if override else ls.path.resolve().parent / ".gpujob"


def job_pull_records(loaded: Sequence[Any]) -> dict[str, PullRecord]:
    """Each loaded job's pull record from its state dir, read-only (planning never creates .gpujob/)."""
    records: dict[str, PullRecord] = {}
    for ls in loaded:
        state = _state_dir_of(ls)
        if state.is_dir():
            rec = load_pull_records(state).get(ls.spec.name)
            if rec is not None:
                records[ls.spec.name] = rec
    return records


def save_pull_record(state_dir: Path, record: PullRecord) -> Path:
    return _write_atomic(pulls_path(state_dir, record.job), record.model_dump_json(indent=2))


def _write_atomic(path: Path, text: str) -> Path:
    """Temp file, fsync, rename, so a kill never leaves half a record."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    tmp = path.with_suffix(".json.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.write(fd, text.encode())
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)
    return path


class LaunchRecord(Model):
    """What gpujob created a job's machine with that the platform never reports back (Paperspace machine
    objects carry no templateId and no diskSize): <state>/launches/<job>.json, written at create and at
    every disk grow. The planner diffs template and disk size against it, never against storageTotal."""

    job: str
    platform: Platform
    resource_id: str
    template: str | None = Field(None, description="machine.template as the job file wrote it.")
    template_id: str | None = Field(None, description="The template id it resolved to.")
    disk_gb: int | None = Field(None, description="The disk size the machine was created (or grown) with.")
    at: datetime

    def template_matches(self, wanted: str) -> bool:
        return wanted in (self.template, self.template_id)


def launches_path(state_dir: Path, job: str) -> Path:
    return state_dir / "launches" / f"{job}.json"


def save_launch_record(state_dir: Path, record: LaunchRecord) -> Path:
    return _write_atomic(launches_path(state_dir, record.job), record.model_dump_json(indent=2))


def load_launch_record(state_dir: Path, job: str) -> LaunchRecord | None:
    try:
        return LaunchRecord.model_validate_json(launches_path(state_dir, job).read_text())
    except (FileNotFoundError, ValueError):
        return None  # an unreadable record proves nothing: the planner then does not diff those fields


def note_launch(state_dir: Path, spec: Any, machine: Any, *, disk_gb: int | None = None) -> None:
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


def job_launch_records(loaded: Sequence[Any]) -> dict[str, LaunchRecord]:
    """Each loaded job's launch record, read-only (planning never creates .gpujob/)."""
    out: dict[str, LaunchRecord] = {}
    for ls in loaded:
        rec = load_launch_record(_state_dir_of(ls), ls.spec.name)
        if rec is not None:
            out[ls.spec.name] = rec
    return out
