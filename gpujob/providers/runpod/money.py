"""RunPod's money facts: the v2 catalog's prices per cloud and GPU count, what v2 billing says each
pod and network volume cost, the account's balance and spend, and the prices of what only an audit
lists (serverless endpoints at their always-on workers)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime

from gpujob.errors import ProviderError
from gpujob.live import Account, LiveResource, Metering, PriceQuote, ResourceRef
from gpujob.providers.runpod import spot, wire
from gpujob.providers.runpod.client import PLATFORM, RunPodClient
from gpujob.providers.runpod.normalize import endpoint_to_live


async def quotes(client: RunPodClient, now: datetime, counts: Iterable[int] = (1,)) -> list[PriceQuote]:
    """The v2 catalog per cloud and per GPU count: its availability filters default to SECURE and one
    GPU, so community stock and 8-GPU stock must each be asked for (v2 spec GpuCloudFilter,
    GpuCountFilter). Prices are per GPU whatever the count."""
    source = f"{client.rest.call_name('GET', '/catalog/gpus')} {now:%Y-%m-%d}"
    asks = [(cloud, n) for cloud in ("secure", "community") for n in sorted(set(counts) or {1})]
    answers = await asyncio.gather(*(client.catalog_gpus(cloud=cloud.upper(), count=n) for cloud, n in asks))
    out: list[PriceQuote] = []
    for (cloud, n), gpus in zip(asks, answers, strict=True):
        for gpu in gpus:
            offered = gpu.secure if cloud == "secure" else gpu.community
            price = gpu.price.secure if cloud == "secure" else gpu.price.community
            if not offered or price is None:
                continue
            available = None if gpu.availability is None else gpu.availability.upper() != "NONE"
            out.append(
                PriceQuote(
                    platform=PLATFORM,
                    gpu_id=gpu.id,
                    cloud=cloud,  # type: ignore[arg-type]
                    gpu_count=n,
                    price_hour=price,
                    available=available,
                    source=source,
                    as_of=now,
                )
            )
    out += spot.profile_quotes()
    return out


async def metering(client: RunPodClient, refs: Sequence[ResourceRef]) -> Metering:
    """What RunPod billed each pod and network volume (v2 billing, day buckets from the earliest
    creation gpujob knows of, else the API's default of the last 30 days)."""
    pods = {r.id for r in refs if r.kind == "pod"}
    volumes = {r.id for r in refs if r.kind == "network_volume"}
    known = [r.created_at for r in refs if r.created_at is not None]
    start = min(known).astimezone(UTC).replace(hour=0, minute=0, second=0, microsecond=0) if known else None
    calls = [client.rest.call_name("GET", f"/billing/{w}") for w in ("pods", "network-volumes")]
    out = Metering(billed_since=start, source=f"{', '.join(calls)} {client.rest.platform_now():%Y-%m-%d}")
    stamp = start.strftime("%Y-%m-%dT%H:%M:%SZ") if start else None
    for what, ids, attr in (("pods", pods, "pod_id"), ("network-volumes", volumes, "network_volume_id")):
        if not ids:
            continue
        try:
            listing = await client.billing(what, stamp)
        except ProviderError as exc:
            out.errors.append(f"RunPod billing/{what}: {exc}")
            continue
        for rec in listing.records:
            rid = getattr(rec, attr)
            if rid in ids and rec.total_amount is not None:
                out.billed[rid] = out.billed.get(rid, 0.0) + rec.total_amount
    return out


async def account(client: RunPodClient) -> Account | None:
    me = await client.myself()
    return Account(
        platform=PLATFORM,
        balance_usd=me.client_balance,
        spend_per_hour_usd=me.current_spend_per_hr,
        spend_limit_usd=me.spend_limit,
        read_at=client.rest.platform_now(),
        source=f"RunPod GraphQL myself {client.rest.platform_now():%Y-%m-%d}",
    )


def priced_endpoints(
    client: RunPodClient, endpoints: Sequence[wire.Endpoint], catalog: Sequence[wire.GpuType]
) -> list[LiveResource]:
    """The serverless endpoints, each priced at workers.min always-on workers of its cheapest pool."""
    cheapest: dict[str, float] = {}
    for gpu in catalog:
        price = gpu.price.serverless
        if gpu.pool and price is not None and price > 0:
            cheapest[gpu.pool] = min(price, cheapest.get(gpu.pool, price))
    source = f"{client.rest.call_name('GET', '/catalog/gpus')} price.serverless {client.rest.platform_now():%Y-%m-%d}"

    def per_gpu(e: wire.Endpoint) -> float | None:
        found = [cheapest[p] for p in (e.gpu.pools if e.gpu else []) if p in cheapest]
        return min(found) if found else None

    return [endpoint_to_live(e, per_gpu(e), source) for e in endpoints]
