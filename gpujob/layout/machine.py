"""Where a job's things are on its machine and what its run's environment holds: pure functions of the
job file, shared by the launcher (gpujob.ssh.launcher), the plan and the sweep layout."""

from __future__ import annotations

import math
from datetime import timedelta

from gpujob.jobfile.model import JobSpec, RunSpec
from gpujob.quote import env_name, remote_path

SCRATCH_ROOT = "/tmp"  # container disk: wiped when the machine stops, so setup runs again


def job_dir(spec: JobSpec) -> str:
    """<mount>/.gpujob/<job>: launcher, log, pid and exit code of the run (durable)."""
    return remote_path(f"{spec.storage.mount}/.gpujob/{spec.name}")


def scratch_dir(spec: JobSpec, scratch_root: str = SCRATCH_ROOT) -> str:
    return remote_path(f"{scratch_root}/.gpujob-{spec.name}")


def checkpoint_interval_s(spec: JobSpec) -> int | None:
    """Seconds between checkpoints; `auto` is Young/Daly: sqrt(2 · mtbf · write_time)."""
    ck = spec.checkpoint
    if ck is None:
        return None
    if isinstance(ck.interval, timedelta):
        return max(1, int(ck.interval.total_seconds()))
    if ck.mtbf is None or ck.write_time is None:  # the spec validator refuses this; never trusted to
        from gpujob.errors import ConfigError

        raise ConfigError(
            f"{spec.name}: checkpoint.interval: auto needs checkpoint.mtbf and checkpoint.write_time",
            hint="set both, or give checkpoint.interval a duration",
        )
    return max(1, int(math.sqrt(2 * ck.mtbf.total_seconds() * ck.write_time.total_seconds())))


def run_env(spec: JobSpec) -> list[tuple[str, str]]:
    """Plain (non-secret) environment of the run, in export order."""
    run = run_section(spec)
    env: dict[str, str] = {env_name(k): v for k, v in run.env.items()}
    env["GPUJOB_JOB"] = spec.name
    # Optional for the command: write the current step number here (one line, replaced each step);
    # `gpujob watch` reads it to record goodput and the time from a preemption to the first new step.
    env["GPUJOB_PROGRESS_FILE"] = f"{job_dir(spec)}/progress"
    if spec.checkpoint is not None:
        env["GPUJOB_CHECKPOINT_DIR"] = remote_path(spec.checkpoint.dir)
        env["GPUJOB_CHECKPOINT_INTERVAL"] = str(checkpoint_interval_s(spec))
        env["GPUJOB_CHECKPOINT_KEEP"] = str(spec.checkpoint.keep)
    if run.caches == "durable":
        mount = remote_path(spec.storage.mount)
        env["HF_HOME"] = f"{mount}/.cache/huggingface"
        env["PIP_CACHE_DIR"] = f"{mount}/.cache/pip"
    return list(env.items())


def run_section(spec: JobSpec) -> RunSpec:
    if spec.run is None:
        raise ValueError(f"job {spec.name} has no run section")
    return spec.run
