"""The composition root: the capabilities gpujob plugs into its planner, applier and watch loop
(gpujob.plan.capability), in the order their hooks run. The only module that names them all."""

from __future__ import annotations

from typing import Any

from gpujob.plan.capability import Capability, install, installed


def capabilities() -> tuple[Capability, ...]:
    """Every capability, built when first asked (a command that plans nothing imports none of them)."""
    from gpujob.audit.capability import Audit
    from gpujob.disks.capability import Disks
    from gpujob.failover.capability import Failover
    from gpujob.gang.capability import Gang
    from gpujob.outputs.capability import Outputs
    from gpujob.preflight.capability import Preflight
    from gpujob.rehearse.capability import Rehearse
    from gpujob.sweep.capability import Sweep

    return (Failover(), Sweep(), Rehearse(), Preflight(), Outputs(), Disks(), Audit(), Gang())


def expand_loaded(loaded: Any) -> list[Any]:
    """The jobs a loaded job file stands for: the first capability that claims it says (a sweep)."""
    for cap in installed():
        jobs = cap.expand_loaded(loaded)
        if jobs is not None:
            return jobs
    return [loaded]


def wire() -> None:
    """Install the list for callers that pass none (a library call plans like the CLI), and the loader's
    expansion of a job file into its jobs."""
    from gpujob.spec import expansion

    install(capabilities)
    expansion.install(expand_loaded)
