"""The seconds of running a machine may spend before budget.max_total_usd, for the on-box agent that
stops it with nobody watching (gpujob.ssh.guard). The meter is the whole running rate, not the GPU's
alone: the pod's container and volume disks and the job's network volume accrue while it runs (a 1 TB
network volume is ~$50 a month, which a GPU-only count would spend past the cap unseen)."""

from __future__ import annotations

from dataclasses import dataclass

from gpujob.cost import rates
from gpujob.cost.live import MACHINE_KINDS, Pricing, footprint
from gpujob.cost.model import MeterLine
from gpujob.live import LiveResource
from gpujob.profile import Profile


@dataclass(frozen=True)
class OnboxBudget:
    seconds: int  # of running left, less the reserve; 0 when already spent
    usd_per_hour: float  # the rate those seconds were counted at
    text: str  # what they were computed from, for the launch line and the stop record


def running_lines(
    profile: Profile,
    machine: LiveResource,
    *,
    network_volume: tuple[str, int, str] | None = None,
) -> dict[str, MeterLine]:
    """What the machine bills per hour while it runs: its GPU at the platform's own rate
    (`cost_per_hour`, RunPod's pod.cost) where given, else the price book's, its disks, its IP, and
    the job's network volume (name, GB, tier). A stopped machine is priced as running: the budget is
    for the run the launch starts."""
    if machine.kind not in MACHINE_KINDS:
        raise ValueError(f"{machine.kind} {machine.name} is not a machine")
    running = machine.model_copy(update={"status": "running"})
    fp = footprint(Pricing(profile), [running])
    if network_volume is not None:
        fp = fp.with_(network_volume=network_volume)
    return rates.meters(fp, profile)


def seconds_left(
    cap: float, spent: float, lines: dict[str, MeterLine], *, reserve_s: float
) -> OnboxBudget | None:
    """(cap − spent) at the summed hourly rate of `lines`, less `reserve_s` (a check, the quiesce grace,
    a margin). None when nothing bills per hour (no rate: no seconds can be counted)."""
    rate = rates.hourly_total(lines)
    if rate <= 0:
        return None
    left = (cap - spent) / rate * 3600 - reserve_s
    gpu = sum(m.usd_per_hour for k, m in lines.items() if k.startswith("gpu:"))
    storage = [m for k, m in lines.items() if not k.startswith("gpu:")]
    parts = f"GPU {rates.usd(gpu)}/h" if gpu else "no GPU meter"
    if storage:
        stored = ", ".join(f"{m.what} {_hourly(m.usd_per_hour)}" for m in storage)
        parts += f" + storage and IP {_hourly(sum(m.usd_per_hour for m in storage))} ({stored})"
    text = f"${cap:,.2f} less ${spent:,.2f} spent, at the pod's ${rate:,.4f}/h: {parts}"
    return OnboxBudget(seconds=max(0, int(left)), usd_per_hour=rate, text=text)


def _hourly(usd_per_hour: float) -> str:
    return f"${usd_per_hour:,.4f}/h"
