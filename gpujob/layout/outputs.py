"""Where a job's outputs are on the machine and where they land locally.

An output path is a directory, a file or a glob (`*`, `?`, `[...]` within one path part). Each is read
through its root: the deepest directory of the path with no glob in it, listed like a checkpoint dir
(gpujob.ssh.listing: the same exclusions: dotfiles, *.tmp, unpullable names) and narrowed to the names
the path selects. A file lands at pull_to/<its path on the machine without the leading />.

The run's log and gpujob's run records (<mount>/.gpujob/<job>: RUN_FILES, never the launcher or
anything else there) are a root of every job, whether or not it has an outputs block: they land in
pull_to/.gpujob/<job>/.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from gpujob.jobfile.model import JobSpec
from gpujob.quote import remote_path

DEFAULT_PULL_TO = "./outputs"
# What the launcher keeps in <mount>/.gpujob/<job> that tells what the run did (never secrets: they
# travel through a FIFO and are never written there).
RUN_FILES = frozenset(
    {
        "run.log",
        "runs",
        "exit_code",
        "finished_at",
        "started_at",
        "progress",
        "progress.first",
        "setup_failed",
    }
)
_GLOB = set("*?[")


@dataclass(frozen=True)
class Root:
    """One output path: `base` is listed, `parts` (the path's parts below base, globs allowed) select
    what of it is the output; no parts: all of base."""

    path: str  # as the job file wrote it (cleaned)
    base: str
    parts: tuple[str, ...] = ()
    local: str = ""  # where base lands, relative to the pull_to dir
    names: frozenset[str] | None = None  # only these names (the run's records)

    def selects(self, name: str) -> bool:
        if self.names is not None:
            return name in self.names
        segs = name.split("/")
        if len(segs) < len(self.parts):
            return False
        return all(fnmatch.fnmatchcase(s, p) for s, p in zip(segs, self.parts, strict=False))

    @property
    def only(self) -> Callable[[str], bool] | None:
        return None if not self.parts and self.names is None else self.selects

    def remote(self, name: str) -> str:
        return f"{self.base.rstrip('/')}/{name}"


def _root(path: str) -> Root:
    clean = remote_path(path)
    segs = clean.strip("/").split("/")
    cut = next((i for i, s in enumerate(segs) if _GLOB & set(s)), len(segs))
    base = "/" + "/".join(segs[:cut])
    return Root(path=clean, base=base, parts=tuple(segs[cut:]), local=base.lstrip("/"))


def output_roots(spec: JobSpec) -> list[Root]:
    """The job file's outputs.paths, each as a Root (a plain path is its own base; remote.resolve turns
    one that is a file into its parent with the file's name selected)."""
    if spec.outputs is None:
        return []
    from gpujob.jobfile.cells import cell_of_dir
    from gpujob.layout.storage import queue_of_run_dir

    roots = [_root(p) for p in dict.fromkeys(spec.outputs.paths)]
    # A sweep cell's results dir lands at pull_to/<cell>/ (docs/sweeps.md), not under its machine path;
    # another queue's run records (the delete of a shared volume covers them) as its own run_root would.
    return [
        Root(path=r.path, base=r.base, parts=r.parts, local=cell)
        if (cell := cell_of_dir(spec, r.base))
        else Root(path=r.path, base=r.base, local=f".gpujob/{job}", names=RUN_FILES)
        if (job := queue_of_run_dir(spec, r.base))
        else r
        for r in roots
    ]


def file_root(path: str) -> Root:
    """A plain output path that turned out to be a file: its directory, selecting just its name."""
    clean = remote_path(path)
    parent, _, name = clean.rpartition("/")
    base = parent or "/"
    return Root(path=clean, base=base, parts=(name,), local=base.lstrip("/"))


def run_root(spec: JobSpec) -> Root:
    from gpujob.layout.machine import job_dir

    return Root(path=job_dir(spec), base=job_dir(spec), local=f".gpujob/{spec.name}", names=RUN_FILES)


def pull_to(spec: JobSpec, spec_path: Path) -> Path:
    """outputs.pull_to (default ./outputs) as an absolute path from the job file's directory."""
    local = Path(spec.outputs.pull_to if spec.outputs is not None else DEFAULT_PULL_TO)
    return local if local.is_absolute() else (spec_path.parent / local).resolve()
