"""Spot pods: RunPod rents them only through its legacy GraphQL API (REST v2 has no spot), at a bid per
GPU that must be at or above the current floor (gpuTypes.lowestPrice.minimumBidPrice). gpujob bids the
floor read just before renting; a resume bids the stored bid or today's floor, whichever is higher. A
bid the market moved past is refused as "too low": like no capacity, the next candidate is tried."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from gpujob.errors import ProviderCapacityError
from gpujob.live import LiveResource, PriceQuote
from gpujob.providers.base import LaunchRequest, ZeroGpuError
from gpujob.providers.runpod import wire
from gpujob.providers.runpod.client import PLATFORM, RunPodClient, is_bid_text
from gpujob.providers.runpod.normalize import SPOT_TAG

BID_TAG = "GPUJOB_BID"  # the bid rides along in env, so a resume knows what was bid at create


async def floor(client: RunPodClient, gpu_id: str, cloud: str | None, count: int) -> float:
    """The live floor for `count` GPUs on this cloud; the profile's spot price only when the API gives
    none; no offer at all is capacity-like (the next candidate may have one)."""
    secure = (cloud or "secure").lower() != "community"
    lowest = await client.lowest_price(gpu_id, count, secure=secure)
    found = lowest.minimum_bid_price if lowest is not None else None
    if found and found > 0:
        return found
    # null or 0 is "no spot offer now", not "bid the profile's price": a stale table price would be a
    # bid the platform refuses, or one far above today's market.
    raise ProviderCapacityError(
        f"RunPod gives no spot floor (minimumBidPrice) for {count}x '{gpu_id}' now",
        platform=PLATFORM,
        call="POST /graphql",
        hint="no spot offer for this candidate; gpujob tries the next one (or set spot: false)",
    )


def default_container_disk_gb() -> int:
    """The container disk the plan prices when container_disk_gb is unset (profile tier container_disk)."""
    from gpujob.profile import load_profile

    return int(load_profile(PLATFORM).tier("container_disk").default_gb or 5)


def check_on_demand_price(r: LaunchRequest) -> None:
    """A `prefer` create falling back to on-demand stays within max_price_per_hour (the candidates were
    priced as spot): over it, this candidate is skipped like one without capacity."""
    from gpujob.profile import load_profile

    if r.max_price_per_hour is None:
        return
    offer = load_profile(PLATFORM).gpu(r.gpu_id)
    if offer is None:
        return
    per_gpu = (
        offer.price_hour_community
        if r.cloud == "community" and offer.price_hour_community
        else offer.price_hour
    )
    total = per_gpu * max(r.gpu_count, 1)
    if total > r.max_price_per_hour:
        raise ProviderCapacityError(
            f"spot is gone and on-demand {r.gpu_count}x '{r.gpu_id}' costs ${total:.2f}/h, over "
            f"max_price_per_hour ${r.max_price_per_hour:.2f}/h",
            platform=PLATFORM,
            call="create",
            hint="machine.spot: prefer stays within max_price_per_hour and what budget.max_hourly_usd leaves "
            "the GPU (gpujob.plan.ceiling): raise either, or add a cheaper GPU",
        )


def rent_input(r: LaunchRequest, bid: float, env: dict[str, str]) -> dict[str, Any]:
    """PodRentInterruptableInput: GraphQL's own spellings (comma-separated ports, env as key/value)."""
    env = {**env, SPOT_TAG: "1", BID_TAG: f"{bid:g}"}
    variables: dict[str, Any] = {
        "name": r.name,
        "gpuTypeId": r.gpu_id,
        "gpuCount": r.gpu_count,
        "cloudType": r.cloud.upper(),
        "bidPerGpu": bid,
        "ports": "22/tcp",
        "env": [{"key": k, "value": v} for k, v in env.items()],
        "startSsh": True,
        "supportPublicIp": True,
        "volumeMountPath": r.mount_path,
    }
    optional = {
        "imageName": r.image,
        "templateId": r.template,
        "dataCenterId": r.region,
        "containerDiskInGb": r.container_disk_gb or default_container_disk_gb(),
        "networkVolumeId": r.network_volume_id,
        "volumeInGb": None if r.network_volume_id else r.volume_gb,
    }
    variables.update({k: v for k, v in optional.items() if v is not None})
    allowed = cuda_at_least(r.min_cuda)
    if allowed:
        variables["allowedCudaVersions"] = allowed  # RP9: GraphQL has no floor, only the set
    return variables


def cuda_at_least(version: str | None) -> list[str]:
    """Every CUDA a RunPod host can report (profile host_cuda) at or above `version`; [] = no filter."""
    from gpujob.images import cuda_key
    from gpujob.profile import load_profile

    hosts = load_profile(PLATFORM).host_cuda
    if not version or hosts is None:
        return []
    return [v for v in hosts.versions if cuda_key(v) >= cuda_key(version)]


async def resume(client: RunPodClient, pod: wire.Pod, resource: LiveResource) -> None:
    """podBidResume at max(stored bid, floor now). Refused for no free GPUs on the old host: RP1."""
    count = pod.gpu.count if pod.gpu and pod.gpu.count else max(resource.gpu_count, 1)
    now = await floor(client, pod.gpu.id if pod.gpu else resource.gpu_id or "", pod.cloud, count)
    bid = max(stored_bid(pod.env) or 0.0, now)
    try:
        await client.bid_resume(pod.id, bid, count)
    except ProviderCapacityError as exc:
        if is_bid_text(str(exc)):
            raise
        # A stopped pod resumes only on its old host: no free GPUs there is RP1.
        raise ZeroGpuError(
            f"pod {pod.id} cannot resume: its host has no free GPUs for it any more",
            platform=PLATFORM,
            call=exc.call,
            hint="replace it: terminate and create a new pod (data on a network volume survives)",
        ) from None


def stored_bid(env: Any) -> float | None:
    try:
        return float(env.get(BID_TAG)) if env and env.get(BID_TAG) else None
    except (TypeError, ValueError):
        return None


def profile_quotes() -> list[PriceQuote]:
    """The v2 catalog has no spot prices; the profile's table supplies them, marked as such."""
    try:
        from gpujob.profile import load_profile

        profile = load_profile(PLATFORM)
    except Exception:  # the bundled profile is missing or broken: no spot prices rather than a crash
        return []
    return [
        PriceQuote(
            platform=PLATFORM,
            gpu_id=g.platform_id,
            cloud="secure",
            spot=True,
            price_hour=g.price_hour_spot,
            # Dated by the profile fact, not by now: the catalog has no spot price to read live.
            source="profile runpod (the catalog has no spot price)",
            as_of=datetime(g.as_of.year, g.as_of.month, g.as_of.day, tzinfo=UTC),
        )
        for g in profile.gpus
        if g.price_hour_spot is not None
    ]
