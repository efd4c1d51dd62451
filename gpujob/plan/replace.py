"""--replace ADDRESS (Terraform's -replace): `<job>.run` relaunches the run even though nothing
changed (`gpujob restart JOB` is its short form); `<job>.pod` / `<job>.machine` recreates the machine,
through the teardown gate like any replace. A saved plan keeps its addresses (Plan.replace)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from gpujob.errors import GpujobError

KINDS = {"runpod": ("run", "pod"), "paperspace": ("run", "machine")}


def check_addresses(addresses: Sequence[str], loaded: Sequence[Any]) -> list[str]:
    """The addresses in order, once each; GpujobError naming the first one that names nothing."""
    jobs = {ls.spec.name: ls.spec.platform for ls in loaded}
    out: list[str] = []
    for address in addresses:
        job, _, what = address.rpartition(".")
        if job not in jobs or what not in KINDS[jobs[job]]:
            known = ", ".join(f"{j}.{k}" for j, p in jobs.items() for k in KINDS[p])
            raise GpujobError(
                f"--replace {address}: no such address in the job files given (known: {known})",
                hint="an address is <job>.run (relaunch the run) or <job>.pod / <job>.machine (recreate the machine)",
            )
        if address not in out:
            out.append(address)
    return out


def machine_forced(ctx: Any) -> str | None:
    """The reason a replace of the machine was asked for, or None."""
    address = f"{ctx.job}.{ctx.machine_kind}"
    return f"asked for: --replace {address}" if address in ctx.replace else None


def run_forced(ctx: Any) -> bool:
    return f"{ctx.job}.run" in ctx.replace
