"""A finished run's files come home before its machine stops (issue 37).

`gpujob watch` stops a machine whose run finished (teardown.on_finish: stop, a drained sweep queue)
only after the final pull brought every checkpoint and output home, verified. A final pull that fails
holds the stop: the machine keeps running (its disk is where the files are) and the next tick pulls
again, each failure an event naming the files and why. After FINAL_PULL_TRIES failures in a row the
stop goes through (a GPU is not billed forever for a file a person must fix), the files stay on the
stopped disk, and the job waits for a person instead of finishing: `gpujob pull` brings them home
(it starts the machine for the pull and stops it again), and the next tick sees them home.

A sweep queue's machine found stopped with its cells not pulled (stopped outside watch, or preempted
right as it drained) waits the same way: a sweep ends when its results are home.
"""

from __future__ import annotations

from typing import Any

from gpujob.live import LiveResource

FINAL_PULL_TRIES = 5  # final pulls failed in a row before the stop goes through anyway


def incomplete(record: Any, limit: int = 5) -> str:
    """What a pull record lacks, each file with why: 'a (why); b (why)' (at most `limit`)."""
    parts = [f"{n} (not pulled, or its checksum differs)" for n in record.missing()]
    for name in record.unverified():
        f = record.file(name)
        said = (f.verify_output if f is not None else "").strip().splitlines()[-1:]
        why = f"checkpoint.verify said: {said[0][:200]}" if said else "checkpoint.verify refused it"
        parts.append(f"{name} ({why})")
    parts += [f"{n!r} (not pullable: {why})" for n, why in sorted(record.unpullable.items())]
    more = len(parts) - limit
    return "; ".join(parts[:limit]) + (f"; and {more} more" if more > 0 else "")


def hold_stop(watcher: Any, job: Any, machine: LiveResource) -> bool:
    """After a failed final pull before a finishing stop: True to hold the stop (the next tick pulls
    again), False once FINAL_PULL_TRIES failed in a row (the stop goes through; `unhome` says the rest)."""
    tries = watcher.final_failures.get(job.name, 0) + 1
    watcher.final_failures[job.name] = tries
    if tries >= FINAL_PULL_TRIES:
        watcher.say(job, "pull-gave-up", f"the final pull failed {tries} times in a row: {machine.name} stops "
                    "with the files it names on its disk", "see the needs-human event that follows",
                    level="human")  # fmt: skip
        return False
    watcher.say(job, "holding", f"{machine.name} keeps running until its files are home (final pull {tries} of "
                f"{FINAL_PULL_TRIES} failed)", "pulling again next tick", level="warning")  # fmt: skip
    return True


def is_home(job: Any, machine: LiveResource | None) -> bool:
    """Whether the latest pull records of `job` are about `machine` and complete: every checkpoint
    pulled and verified, every output pulled (checked by sha256), nothing unpullable."""
    from gpujob.plan.outputs_record import load_outputs_record
    from gpujob.plan.records import load_pull_record

    if machine is None:
        return False
    spec = job.loaded.spec
    if spec.checkpoint is not None and spec.checkpoint.pull != "never":
        rec = load_pull_record(job.state_dir, spec.name)
        if rec is None or not rec.applies_to(machine.id, machine.network_volume_id) or not rec.complete:
            return False
    if spec.outputs is not None:
        out = load_outputs_record(job.state_dir, spec.name)
        if out is None or out.resource_id != machine.id or out.unpullable:
            return False
    return True


def unhome(watcher: Any, job: Any, machine: LiveResource | None) -> bool:
    """A finished run whose machine is not running and whose final pull did not happen: True (the job
    waits for a person, said once) when its files are not home and watch must not call it finished."""
    from gpujob.errors import command_text, job_file_args
    from gpujob.jobfile.cells import queue_cells

    spec = job.loaded.spec
    if machine is None:
        return False  # gone: a terminate passed the teardown gate's pull, and nothing is left to read
    gave_up = watcher.final_failures.get(job.name, 0) >= FINAL_PULL_TRIES
    if not gave_up and queue_cells(spec) is None:
        return False  # a job's own on-box stop leaves its checkpoints on the kept disk (docs/watch.md)
    if is_home(job, machine):
        watcher.final_failures.pop(job.name, None)
        return False
    where, state = machine.name, machine.status
    files = "its cells' files" if queue_cells(spec) is not None else "its checkpoints and outputs"
    watcher.say(
        job,
        "needs-human",
        f"the run finished but {files} are not all home: {where} is {state} with them on its disk",
        f"fix what the pull-failed events name, then run {command_text('gpujob', 'pull', *job_file_args(job.path))} "
        f"(it starts {where} for the pull and stops it again); watch sees them home on its next tick",
        level="human",
        topic="home",
    )
    job.blocked_ticks += 1
    return True
