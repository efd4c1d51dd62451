"""outputs/<job>.json in the project's store: what the last outputs pull brought home (each file's
path on the machine, size and sha256, checked against the remote's), from which machine and when.
The plan shows it beside a destructive action and the unreachable-machine refusal quotes its age; the
gate itself never trusts it alone: it lists the machine again and reads the local copies."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

from pydantic import Field

from gpujob.model import Model

if TYPE_CHECKING:
    from gpujob.state import StateRef


class OutputFile(Model):
    size: int
    sha256: str


class OutputsRecord(Model):
    job: str
    resource_id: str | None = None
    local_dir: str
    at: datetime
    files: dict[str, OutputFile] = Field(
        default_factory=dict, description="Path on the machine -> the verified local copy's size and sha256."
    )
    unpullable: dict[str, str] = Field(default_factory=dict)

    @property
    def total_bytes(self) -> int:
        return sum(f.size for f in self.files.values())


def outputs_name(job: str) -> str:
    return f"outputs/{job}.json"


def save_outputs_record(state: StateRef, record: OutputsRecord) -> None:
    from gpujob.state import write_model

    write_model(state, outputs_name(record.job), record)


def load_outputs_record(state: StateRef, job: str) -> OutputsRecord | None:
    from gpujob.state import read_model

    return read_model(state, outputs_name(job), OutputsRecord)
