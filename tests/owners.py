"""Resource names as gpujob gives them (gpujob.naming) for the project id the tests use."""

from __future__ import annotations

import json
from pathlib import Path

from gpujob import naming

PROJECT = "testproj"


def machine(job: str, project: str = PROJECT) -> str:
    return naming.machine_name(job, project)


def volume(job: str, vol: str, project: str = PROJECT) -> str:
    return naming.volume_name(job, vol, project)


def marker(project: str = PROJECT) -> dict[str, str]:
    """The attributes a RunPod pod of `project` reports (its env marker, normalised)."""
    return {"project": project}


def pin_project(state_dir: Path, project: str = PROJECT) -> Path:
    """Write <state_dir>/project.json as gpujob.project would have made it, with a known id."""
    state_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    path = state_dir / "project.json"
    body = {
        "id": project,
        "created_at": "2026-11-01T00:00:00Z",
        "created_by": "test@host",
        "location": str(state_dir),
    }
    path.write_text(json.dumps(body) + "\n")
    return path


OTHER = "othrproj"  # another checkout's project id
