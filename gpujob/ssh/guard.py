"""The on-box agent's limits (budget.max_total_usd, run.stall_after) as the launcher renders them, and
how a machine stops itself. The agent itself is shell, in templates/launcher.sh.j2 (`launcher.sh guard`)."""

from __future__ import annotations

from gpujob.jobfile.model import JobSpec
from gpujob.model import Model
from gpujob.naming import SEP

# How a machine stops itself, with no account key on it: RunPod's pods carry runpodctl with a key scoped
# to the pod ("Manage Pods": `runpodctl stop pod $RUNPOD_POD_ID`). A Paperspace machine is not stopped
# from inside: its only unbilled state, off, is reached by a stop from its console or API, whose keys
# are team-wide, and no document says a guest `shutdown` ends the billing (in the simulator's containers
# it could reach the host's init); gpujob apply/watch and machine.auto_shutdown stop it instead, and the
# plan says so (gpujob.plan.self_stop, paperspace-no-self-stop).
SELF_STOP = {"runpod": 'runpodctl stop pod "$RUNPOD_POD_ID"'}
GUARD_EVERY_S = 10.0


class Guard(Model):
    """The on-box agent's limits, held with nobody watching: past them the pod quiesces its run (SIGTERM,
    the grace for a final save, SIGKILL) and stops itself, its checkpoints kept on its disks."""

    budget_s: int | None = None  # seconds of this run before budget.max_total_usd, less the margin
    budget_text: str = ""  # what the budget_s was computed from, for the stop record
    stall_s: int | None = None  # run.stall_after
    grace_s: float = 30.0
    every_s: float = GUARD_EVERY_S


def guard_of(spec: JobSpec, guard: Guard | None) -> Guard | None:
    """The guard a launch renders: the one given, else run.stall_after's alone; None when the
    machine cannot stop itself (Paperspace, a sweep's queue: gpujob stops those) or nothing is held."""
    run = spec.run
    if run is None or spec.platform not in SELF_STOP or SEP in spec.name:
        return None
    g = guard or Guard()
    if run.stall_after is not None and g.stall_s is None:
        g = g.model_copy(update={"stall_s": int(run.stall_after.total_seconds())})
    return g if g.budget_s is not None or g.stall_s is not None else None
