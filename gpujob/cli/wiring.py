"""The composition root: the capabilities gpujob plugs into its planner, applier and watch loop
(gpujob.plan.capability), in the order their hooks run. The only module that names them all."""

from __future__ import annotations

from gpujob.plan.capability import Capability, install


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


def wire() -> None:
    """Install the list for callers that pass none (a library call plans like the CLI)."""
    install(capabilities)
