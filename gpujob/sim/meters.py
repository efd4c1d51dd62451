"""Billing meters. Rates are piecewise constant between state changes, so the engine calls `accrue`
right before every change and before every bill read; cost = Σ rate × simulated seconds, exactly.

What bills when (from the profiles):
  RunPod pod      gpu (per-GPU price × count; spot price if interruptible) and container disk while
                  RUNNING; volume disk at the running price while up, at the stopped price (2×) while
                  EXITED; nothing after terminate.
  network volume  always, until deleted.
  Paperspace      machine rate while ready; block storage always (running/stopped price, monthly cap);
                  dynamic IP only while ready; a claimed static IP and snapshots always (monthly caps).
"""

from __future__ import annotations

from typing import Any

from gpujob.sim.prices import SECONDS_PER_MONTH, Prices
from gpujob.sim.state import Metered, PsIp, PsMachine, PsSnapshot, RpPod, RpVolume, SimState

UP_STATES = {"PROVISIONING", "STARTING", "RUNNING"}


def rates(res: Metered, rp: Prices, ps: Prices) -> dict[str, tuple[float, float | None]]:
    """Current per-second rate of each line item, with its monthly cap (None = no cap)."""
    if res.ended_at is not None:
        return {}
    if isinstance(res, RpPod):
        out: dict[str, tuple[float, float | None]] = {}
        if res.status == "RUNNING":
            gpu = rp.gpu_hour(res.gpu_id or "", cloud=res.cloud, spot=res.interruptible) * res.gpu_count
            out["gpu"] = (gpu / 3600.0, None)
            out["container_disk"] = (res.disk * rp.tier("container_disk").running / SECONDS_PER_MONTH, None)
        if res.volume_gb:
            tier = rp.tier("volume_disk")
            price = tier.running if res.status in UP_STATES else tier.stopped
            out["volume_disk"] = (res.volume_gb * price / SECONDS_PER_MONTH, None)
        return out
    if isinstance(res, RpVolume):
        if rp.profile is not None:
            # The profile owns the maths (marginal over-1 TB rate), so meter and plan cannot drift apart.
            kind = "high-performance" if res.type == "HIGH_PERFORMANCE" else "standard"
            month = rp.profile.network_volume_tier(kind).month_price(res.size)
            return {"network_volume": (month / SECONDS_PER_MONTH, None)}
        tier = rp.tier("network_volume")
        return {"network_volume": (res.size * tier.running / SECONDS_PER_MONTH, None)}
    if isinstance(res, PsMachine):
        out = {}
        ready = res.state in ("ready", "serviceready")
        if ready:
            out["compute"] = (ps.machine_hour(res.machine_type) / 3600.0, None)
            if res.public_ip_type == "dynamic":
                dyn = ps.addon("dynamic")
                out["dynamic_ip"] = (dyn.hour / 3600.0, dyn.cap)
        tier = ps.tier("block_storage")
        price = tier.running if ready else tier.stopped
        out["block_storage"] = (res.disk_size * price / SECONDS_PER_MONTH, tier.cap)
        return out
    if isinstance(res, PsIp):
        st = ps.addon("static")
        return {"static_ip": (st.hour / 3600.0, st.cap)}
    if isinstance(res, PsSnapshot):
        snap = ps.addon("snapshot")
        return {"snapshot": (snap.hour / 3600.0 + res.size_gb * snap.gb_month / SECONDS_PER_MONTH, snap.cap)}
    return {}


def accrue(res: Metered, now: float, rp: Prices, ps: Prices) -> None:
    """Bill the time since the last accrual at the current rates."""
    until = now if res.ended_at is None else min(now, res.ended_at)
    dt = until - res.metered_to
    if dt > 0:
        for item, (rate, cap) in rates(res, rp, ps).items():
            total = res.meter.get(item, 0.0) + rate * dt
            if cap is not None:
                cycles = int((until - res.created_at) // SECONDS_PER_MONTH) + 1
                total = min(total, cap * cycles)
            res.meter[item] = total
    res.metered_to = max(res.metered_to, until)


def all_resources(state: SimState) -> list[tuple[str, str, Metered]]:
    rows: list[tuple[str, str, Metered]] = []
    rows += [("runpod", "pod", p) for p in state.pods.values()]
    rows += [("runpod", "network_volume", v) for v in state.volumes.values()]
    rows += [("paperspace", "machine", m) for m in state.machines.values()]
    rows += [("paperspace", "public_ip", i) for i in state.ips.values()]
    rows += [("paperspace", "snapshot", s) for s in state.snapshots.values()]
    return rows


def bill(state: SimState, now: float, rp: Prices, ps: Prices) -> dict[str, Any]:
    """Line items per resource and totals, after accruing everything up to `now`."""
    items: list[dict[str, Any]] = []
    totals: dict[str, float] = {"runpod": 0.0, "paperspace": 0.0}
    for platform, kind, res in all_resources(state):
        accrue(res, now, rp, ps)
        rid = getattr(res, "id", None) or getattr(res, "ip", "")
        name = getattr(res, "name", None) or rid
        current = rates(res, rp, ps)
        for item, usd in sorted(res.meter.items()):
            items.append(
                {
                    "platform": platform,
                    "kind": kind,
                    "id": rid,
                    "name": name,
                    "item": item,
                    "usd": usd,
                    "rate_per_hour": current.get(item, (0.0, None))[0] * 3600.0,
                    "ended": res.ended_at is not None,
                }
            )
            totals[platform] += usd
    return {
        "now": now,
        "items": items,
        "totals": {**totals, "total": totals["runpod"] + totals["paperspace"]},
        "price_sources": {"runpod": rp.source, "paperspace": ps.source},
    }
