"""A `fallback:` entry is a whole job of its platform: the job file with the entry's platform, machine
and storage in place of its own (pure data: the loader's checks of an entry are gpujob.spec.fallback's,
moving a job is gpujob.failover's)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gpujob.jobfile.model import JobSpec

REPLACED = ("platform", "machine", "storage")  # what an entry may hold: all else is the job's own
FAILOVER_KEYS = ("fallback", "failover", "failover_after", "failback")


def effective_spec(spec: JobSpec, entry: int | None) -> JobSpec:
    """The job as it runs on entry `entry` (None or -1: its own platform)."""
    if entry is None or entry < 0:
        return spec
    fb = spec.fallback[entry]
    return spec.model_copy(update={"platform": fb.platform, "machine": fb.machine, "storage": fb.storage})


def chain(spec: JobSpec) -> list[tuple[int, JobSpec]]:
    """Every place the job may run, in order: (-1, its own), then (i, entry i)."""
    return [(-1, spec)] + [(i, effective_spec(spec, i)) for i in range(len(spec.fallback))]


def place_name(spec: JobSpec, entry: int) -> str:
    return spec.platform if entry < 0 else f"{spec.fallback[entry].platform} (fallback[{entry}])"


def entry_key(key_path: str, i: int) -> str:
    """Where a key of the job as it runs on entry `i` is written: platform, machine and storage inside
    fallback[i], the shared blocks at the top."""
    head = key_path.split(".", 1)[0].split("[", 1)[0]
    return f"fallback[{i}].{key_path}" if i >= 0 and head in REPLACED else key_path
