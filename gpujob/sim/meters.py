"""Billing meters. Rates are piecewise constant between state changes, so the engine calls `accrue`
right before every change and before every bill read; cost = Σ rate × simulated seconds, exactly.

Every line is also kept per hour bucket (`Metered.buckets`), which the RunPod billing endpoints serve.

What bills when (from the profiles):
  RunPod pod      gpu (per-GPU price × count; spot price if interruptible) and container disk while
                  RUNNING; volume disk at the running price while up, at the stopped price (2×) while
                  EXITED; nothing after terminate.
  network volume  always, until deleted.
  serverless      workers.min × GPUs per worker × the pool's serverless price, always (idle or not).
  Paperspace      machine rate while ready; block storage always (running/stopped price, monthly cap);
                  dynamic IP only while ready; a claimed static IP and snapshots always (monthly caps).
"""

from __future__ import annotations

from typing import Any

from gpujob.profile import billed_hours
from gpujob.sim.prices import SECONDS_PER_MONTH, Prices
from gpujob.sim.state import Metered, PsIp, PsMachine, PsSnapshot, RpEndpoint, RpPod, RpVolume, SimState

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
    if isinstance(res, RpEndpoint):
        if res.workers_min <= 0:
            return {}
        return {
            "active_workers": (res.workers_min * res.gpu_count * rp.serverless_hour(res.pools) / 3600.0, None)
        }
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
    """Bill the time since the last accrual at the current rates.

    A per-second line adds rate × time, split over the hour buckets it spans (the billing endpoint's
    records). An hourly line (the profile says which) bills each started hour of its billing period in
    full, the moment the hour starts: a period opens when the line starts billing or its rate changes, and
    closes when it stops billing. Monthly caps bound each line per 30-day cycle from creation."""
    until = now if res.ended_at is None else min(now, res.ended_at)
    current = rates(res, rp, ps)
    for item in [i for i in res.sessions if i not in current]:
        del res.sessions[item]  # the line stopped billing: its period is over
    dt = until - res.metered_to
    if dt > 0:
        prices = rp if _platform(res) == "runpod" else ps
        for item, (rate, cap) in current.items():
            if prices.granularity(item) == "hour":
                added = _hourly(res, item, rate, until)
            else:
                added = _split(res.metered_to, until, rate)
            _book(res, item, added, cap, until)
    res.metered_to = max(res.metered_to, until)


def _platform(res: Metered) -> str:
    return "runpod" if isinstance(res, RpPod | RpVolume | RpEndpoint) else "paperspace"


def _split(start: float, end: float, rate: float) -> dict[int, float]:
    """rate × time over [start, end), by hour bucket."""
    out: dict[int, float] = {}
    t = start
    while t < end:
        h = int(t // 3600)
        stop = min(end, (h + 1) * 3600.0)
        out[h] = out.get(h, 0.0) + rate * (stop - t)
        t = stop
    return out


def _hourly(res: Metered, item: str, rate: float, until: float) -> dict[int, float]:
    """Charges of the started hours of `item`'s current billing period not billed yet."""
    session = res.sessions.get(item)
    if session is None or session[1] != rate:
        session = res.sessions[item] = [res.metered_to, rate, 0.0]
    start, _, billed = session
    hours = billed_hours(until - start)
    out: dict[int, float] = {}
    for k in range(int(billed), hours):
        h = int((start + k * 3600) // 3600)
        out[h] = out.get(h, 0.0) + rate * 3600
    session[2] = float(max(hours, int(billed)))
    return out


def _book(res: Metered, item: str, added: dict[int, float], cap: float | None, until: float) -> None:
    delta = sum(added.values())
    if delta <= 0:
        return
    old = res.meter.get(item, 0.0)
    total = old + delta
    if cap is not None:
        cycles = int((until - res.created_at) // SECONDS_PER_MONTH) + 1
        total = min(total, cap * cycles)
    kept = max(total - old, 0.0)
    res.meter[item] = old + kept
    scale = kept / delta
    for h, usd in added.items():
        bucket = res.buckets.setdefault(str(h), {})
        bucket[item] = bucket.get(item, 0.0) + usd * scale


def spend_between(res: Metered, start: float, end: float) -> dict[str, float]:
    """Per line item, what the buckets hold for hours starting in [start, end)."""
    out: dict[str, float] = {}
    for key, items in res.buckets.items():
        t = int(key) * 3600.0
        if start <= t < end:
            for item, usd in items.items():
                out[item] = out.get(item, 0.0) + usd
    return out


def all_resources(state: SimState) -> list[tuple[str, str, Metered]]:
    rows: list[tuple[str, str, Metered]] = []
    rows += [("runpod", "pod", p) for p in state.pods.values()]
    rows += [("runpod", "network_volume", v) for v in state.volumes.values()]
    rows += [("runpod", "endpoint", e) for e in state.endpoints.values()]
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
        # every line that bills now, also one that has not accrued a cent yet (a frozen clock at create)
        lines = {**dict.fromkeys(current, 0.0), **res.meter}
        for item, usd in sorted(lines.items()):
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
