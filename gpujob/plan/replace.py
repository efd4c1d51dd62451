"""--replace ADDRESS (Terraform's -replace): `<job>.run` relaunches the run even though nothing
changed (`gpujob restart JOB` is its short form); `<job>.pod` / `<job>.machine` recreates the machine,
through the teardown gate like any replace. A saved plan keeps its addresses (Plan.replace).

A sweep's queue is addressed as the plan prints its actions, `abl.q1.run` (the older `abl--q1.run` is
read as the same), and the sweep's own name stands for every queue: `abl.run` is `abl.q1.run`,
`abl.q2.run`, … (gpujob.layout.address). Addresses are kept in the printed form."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from gpujob.errors import GpujobError

KINDS = {"runpod": ("run", "pod"), "paperspace": ("run", "machine")}


def check_addresses(addresses: Sequence[str], loaded: Sequence[Any]) -> list[str]:
    """The addresses in the printed form, in order, once each; GpujobError naming the first one that
    names nothing."""
    from gpujob.layout.address import jobs_named, shown

    jobs = {ls.spec.name: ls.spec.platform for ls in loaded}
    out: list[str] = []
    for address in addresses:
        job, _, what = address.rpartition(".")
        named = [j for j in jobs_named(job, jobs) if what in KINDS[jobs[j]]] if job else []
        if not named:
            known = ", ".join(f"{shown(j)}.{k}" for j, p in jobs.items() for k in KINDS[p])
            raise GpujobError(
                f"--replace {address}: no such address in the job files given (known: {known})",
                hint="an address is <job>.run (relaunch the run) or <job>.pod / <job>.machine (recreate the machine)",
            )
        for j in named:
            if f"{shown(j)}.{what}" not in out:
                out.append(f"{shown(j)}.{what}")
    return out


def of_job(addresses: Sequence[str], job: str) -> set[str]:
    """The addresses (printed form, or a saved plan's older `abl--q1.run`) that are job `job`'s."""
    from gpujob.layout.address import queue_job_of

    return {a for a in addresses if queue_job_of(a.rpartition(".")[0]) == job}


def _address(ctx: Any, what: str) -> str:
    from gpujob.layout.address import shown

    return f"{shown(ctx.job)}.{what}"


def _asked(ctx: Any, what: str) -> bool:
    from gpujob.layout.address import queue_job_of

    return any(
        queue_job_of(a.rpartition(".")[0]) == ctx.job and a.rpartition(".")[2] == what for a in ctx.replace
    )


def machine_forced(ctx: Any) -> str | None:
    """The reason a replace of the machine was asked for, or None."""
    return (
        f"asked for: --replace {_address(ctx, ctx.machine_kind)}" if _asked(ctx, ctx.machine_kind) else None
    )


def run_forced(ctx: Any) -> bool:
    return _asked(ctx, "run")


def run_address(job: str) -> str:
    """The address that relaunches job `job`'s run, as --replace takes it."""
    from gpujob.layout.address import shown

    return f"{shown(job)}.run"
