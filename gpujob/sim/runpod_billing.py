"""RunPod v2 billing endpoints (/v2/billing, /v2/billing/pods, /v2/billing/network-volumes,
/v2/billing/clusters) in the shape of the v2 OpenAPI (ListBillingResponse, ListPodBillingResponse,
ListNetworkVolumeBillingResponse, ListClusterBillingResponse), computed from the simulator's hourly meter
buckets. An Instant Cluster bills as the sum of its member pods (GPU and disk; the overlay network bills
nothing here): each member is also listed under /v2/billing/pods by its pod id, and /v2/billing counts
members under the cluster* amounts, not the pod* ones.

Query rules as the spec states them: `bucketSize` hour|day|week|month|year (default day); either
`startTime`/`endTime` (RFC 3339; start snapped down and end snapped up to bucket boundaries; defaults 30
days ago and now) or `lastN` buckets ending with the current one, never both. Records are emitted per
resource per bucket that billed something."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from datetime import UTC, datetime, timedelta
from typing import Any

from gpujob.sim import meters
from gpujob.sim.clock import iso
from gpujob.sim.engine import SimError
from gpujob.sim.http import Request, Response
from gpujob.sim.state import Metered, RpPod, RpVolume

SIZES = ("hour", "day", "week", "month", "year")
POD_FIELDS = ("totalAmount", "gpuAmount", "cpuAmount", "diskAmount")
VOLUME_FIELDS = ("totalAmount", "standardAmount", "highPerformanceAmount")
CLUSTER_FIELDS = ("totalAmount", "gpuAmount", "diskAmount", "networkingAmount")
ALL_FIELDS = (
    "totalAmount", "podGpuAmount", "podCpuAmount", "podDiskAmount", "serverlessGpuAmount",
    "serverlessCpuAmount", "serverlessDiskAmount", "serverlessFeeAmount", "storageStandardAmount",
    "storageHighPerformanceAmount", "endpointAmount", "clusterGpuAmount", "clusterDiskAmount",
    "clusterNetworkingAmount",
)  # fmt: skip


def floor_bucket(t: datetime, size: str) -> datetime:
    t = t.astimezone(UTC)
    if size == "hour":
        return t.replace(minute=0, second=0, microsecond=0)
    day = t.replace(hour=0, minute=0, second=0, microsecond=0)
    if size == "day":
        return day
    if size == "week":
        return day - timedelta(days=day.weekday())
    if size == "month":
        return day.replace(day=1)
    return day.replace(month=1, day=1)


def next_bucket(t: datetime, size: str) -> datetime:
    if size == "hour":
        return t + timedelta(hours=1)
    if size == "day":
        return t + timedelta(days=1)
    if size == "week":
        return t + timedelta(days=7)
    if size == "month":
        return t.replace(year=t.year + 1, month=1) if t.month == 12 else t.replace(month=t.month + 1)
    return t.replace(year=t.year + 1)


def _parse(req: Request, name: str) -> datetime | None:
    value = req.arg(name)
    if value is None:
        return None
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise SimError(400, f"{name} must be an RFC 3339 date-time, got {value!r}", "bad_request") from None
    if parsed.tzinfo is None:
        raise SimError(400, f"{name} must carry a time zone (RFC 3339)", "bad_request")
    return parsed


def window(req: Request, now: float) -> tuple[datetime, datetime, str]:
    """(start, end, bucketSize) resolved as the spec describes, aligned to bucket boundaries."""
    size = req.arg("bucketSize", "day") or "day"
    if size not in SIZES:
        raise SimError(400, f"bucketSize must be one of {', '.join(SIZES)}", "bad_request")
    start, end, last_n = _parse(req, "startTime"), _parse(req, "endTime"), req.arg("lastN")
    current = datetime.fromtimestamp(now, UTC)
    if last_n is not None:
        if start is not None or end is not None:
            raise SimError(400, "lastN is mutually exclusive with startTime/endTime", "bad_request")
        try:
            n = int(last_n)
        except ValueError:
            n = 0
        if n < 1:
            raise SimError(400, "lastN must be an integer of at least 1", "bad_request")
        end = next_bucket(floor_bucket(current, size), size)
        start = floor_bucket(current, size)
        for _ in range(n - 1):
            start = floor_bucket(start - timedelta(seconds=1), size)
        return start, end, size
    start = floor_bucket(start or current - timedelta(days=30), size)
    end = end or current
    aligned = floor_bucket(end, size)
    end = aligned if aligned == end else next_bucket(aligned, size)
    if end <= start:
        raise SimError(400, "endTime must be after startTime", "bad_request")
    return start, end, size


def _buckets(
    res: Metered, start: datetime, end: datetime, size: str
) -> Iterable[tuple[datetime, dict[str, float]]]:
    t = start
    while t < end:
        nxt = next_bucket(t, size)
        spent = meters.spend_between(res, t.timestamp(), nxt.timestamp())
        if any(v > 0 for v in spent.values()):
            yield t, spent
        t = nxt


def _pod_amounts(spent: dict[str, float]) -> dict[str, float]:
    gpu = spent.get("gpu", 0.0)
    disk = spent.get("container_disk", 0.0) + spent.get("volume_disk", 0.0)
    return {"totalAmount": gpu + disk, "gpuAmount": gpu, "cpuAmount": 0.0, "diskAmount": disk}


def _volume_amounts(vol: RpVolume, spent: dict[str, float]) -> dict[str, float]:
    total = spent.get("network_volume", 0.0)
    hp = vol.type == "HIGH_PERFORMANCE"
    return {
        "totalAmount": total,
        "standardAmount": 0.0 if hp else total,
        "highPerformanceAmount": total if hp else 0.0,
    }


def _span(t: datetime, size: str) -> dict[str, str | None]:
    return {"startTime": iso(t.timestamp()), "endTime": iso(next_bucket(t, size).timestamp())}


def _totals(rows: list[dict[str, Any]], fields: tuple[str, ...]) -> dict[str, float]:
    return {f: sum(float(r.get(f, 0.0)) for r in rows) for f in fields}


def add_billing_routes(api: Any) -> None:
    sim = api.sim

    def listing(
        req: Request,
        kind: type[Metered],
        id_arg: str,
        amounts: Callable[[Any, dict[str, float]], dict[str, float]],
        fields: tuple[str, ...],
        key: str,
        count_key: str,
    ) -> Response:
        with sim.lock:
            sim.bill()  # accrue every meter up to now
            start, end, size = window(req, sim.now())
            wanted = req.arg(id_arg)
            pool = sim.state.pods if kind is RpPod else sim.state.volumes
            rows: list[dict[str, Any]] = []
            for res in sorted(pool.values(), key=lambda r: (r.created_at, r.id)):
                if wanted and res.id != wanted:
                    continue
                for t, spent in _buckets(res, start, end, size):
                    rows.append({**_span(t, size), key: res.id, **amounts(res, spent)})
        rows.sort(key=lambda r: (r["startTime"], r[key]))
        query = {
            "startTime": iso(start.timestamp()),
            "endTime": iso(end.timestamp()),
            "bucketSize": size,
            id_arg: wanted,
        }
        meta = {
            "query": query,
            "recordCount": len(rows),
            count_key: len({r[key] for r in rows}),
            "totals": _totals(rows, fields),
        }
        return Response(200, {"records": rows, "metadata": meta})

    def pods(req: Request) -> Response:
        return listing(
            req, RpPod, "podId", lambda _r, s: _pod_amounts(s), POD_FIELDS, "podId", "uniquePodCount"
        )

    def volumes(req: Request) -> Response:
        return listing(
            req, RpVolume, "networkVolumeId", _volume_amounts, VOLUME_FIELDS, "networkVolumeId",
            "uniqueNetworkVolumeCount",
        )  # fmt: skip

    def everything(req: Request) -> Response:
        with sim.lock:
            sim.bill()
            start, end, size = window(req, sim.now())
            by_bucket: dict[datetime, dict[str, float]] = {}
            for res in list(sim.state.pods.values()) + list(sim.state.volumes.values()):
                for t, spent in _buckets(res, start, end, size):
                    row = by_bucket.setdefault(t, dict.fromkeys(ALL_FIELDS, 0.0))
                    if isinstance(res, RpPod):
                        a = _pod_amounts(spent)
                        part = "cluster" if res.cluster else "pod"  # a member bills as its cluster
                        row[f"{part}GpuAmount"] += a["gpuAmount"]
                        row[f"{part}DiskAmount"] += a["diskAmount"]
                    else:
                        v = _volume_amounts(res, spent)
                        row["storageStandardAmount"] += v["standardAmount"]
                        row["storageHighPerformanceAmount"] += v["highPerformanceAmount"]
                    row["totalAmount"] += sum(spent.values())
        rows = [{**_span(t, size), **amounts} for t, amounts in sorted(by_bucket.items())]
        query = {"startTime": iso(start.timestamp()), "endTime": iso(end.timestamp()), "bucketSize": size}
        meta = {"query": query, "recordCount": len(rows), "totals": _totals(rows, ALL_FIELDS)}
        return Response(200, {"records": rows, "metadata": meta})

    def clusters(req: Request) -> Response:
        with sim.lock:
            sim.bill()
            start, end, size = window(req, sim.now())
            wanted = req.arg("clusterId")
            per: dict[tuple[datetime, str], dict[str, float]] = {}
            for pod in sim.state.pods.values():
                cid = (pod.cluster or {}).get("id")
                if not cid or (wanted and cid != wanted):
                    continue
                for t, spent in _buckets(pod, start, end, size):
                    a = _pod_amounts(spent)
                    row = per.setdefault((t, cid), dict.fromkeys(CLUSTER_FIELDS, 0.0))
                    row["gpuAmount"] += a["gpuAmount"]
                    row["diskAmount"] += a["diskAmount"]
                    row["totalAmount"] += a["totalAmount"]
        rows = [{**_span(t, size), "clusterId": cid, **amounts} for (t, cid), amounts in sorted(per.items())]
        query = {"startTime": iso(start.timestamp()), "endTime": iso(end.timestamp()), "bucketSize": size,
                 "clusterId": wanted}  # fmt: skip
        meta = {"query": query, "recordCount": len(rows), "uniqueClusterCount": len({r["clusterId"] for r in rows}),
                "totals": _totals(rows, CLUSTER_FIELDS)}  # fmt: skip
        return Response(200, {"records": rows, "metadata": meta})

    api.route("GET", "/v2/billing", everything)
    api.route("GET", "/v2/billing/clusters", clusters)
    api.route("GET", "/v2/billing/pods", pods)
    api.route("GET", "/v2/billing/network-volumes", volumes)
