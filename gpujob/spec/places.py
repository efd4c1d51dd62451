"""Where a job's local paths may lead: inside its project. Checked on the raw mapping with the job file's
location (the model alone cannot know where `..` or a symlink resolves).

The project is the job file's folder, or the folder above `jobs/` for a `jobs/*.yaml` file (the layout
`gpujob` discovers), so `src: ..` in jobs/bert.yaml means the repository root.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from gpujob.spec.checks import CheckProblem


def project_root(job_file: Path) -> Path:
    folder = Path(os.path.abspath(job_file)).parent
    return folder.parent if folder.name == "jobs" else folder


def _inside(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def place_problems(data: Mapping[str, Any], job_file: Path) -> list[CheckProblem]:
    """run.sync.src must resolve (symlinks included) to a folder inside the project."""
    run = data.get("run")
    sync = run.get("sync") if isinstance(run, Mapping) else None
    src = sync.get("src") if isinstance(sync, Mapping) else None
    if not isinstance(src, str) or "\x00" in src or src.startswith(("/", "~", "\\")):
        return []  # the model reports these
    root = project_root(job_file).resolve()
    target = (Path(os.path.abspath(job_file)).parent / src).resolve()
    if _inside(target, root):
        return []
    return [
        CheckProblem(
            "run.sync.src",
            f"'{src}' leads to {target}, outside the project {root}: a sync would upload it to the machine",
            "sync a folder inside the project (the job file's folder, or the folder above jobs/)",
        )
    ]
