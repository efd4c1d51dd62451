"""Which job files a command means, found without loading any (`gpujob validate` needs these before it
knows whether it needs pydantic at all)."""

from __future__ import annotations

from pathlib import Path


def discover_job_files(root: Path) -> list[Path]:
    """root/job.yaml if present, else every root/*.job.yaml and root/jobs/*.yaml (sorted)."""
    root = Path(root)
    single = root / "job.yaml"
    if single.is_file():
        return [single]
    found = sorted(p for p in root.glob("*.job.yaml") if p.is_file())
    found += sorted(p for p in root.glob("jobs/*.yaml") if p.is_file())
    return found


def no_job_files_hint(command: str) -> str:
    """What to run when the current directory holds no job file: a job file a level or two down, when
    there is one, and `gpujob init`, which writes a starter one here (both work as printed)."""
    import shlex

    here = Path.cwd()
    near = sorted(p for p in [*here.glob("*/job.yaml"), *here.glob("*/*/job.yaml")] if p.is_file())
    init = "or write a starter job.yaml (and train.py) here: `gpujob init`"
    if near:
        return f"name one: `gpujob {command} {shlex.quote(str(near[0].relative_to(here)))}`, {init}"
    return f"pass a job file's path ({'gpujob ' + command} path/to/job.yaml), {init}"
