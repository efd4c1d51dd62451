"""Create the machine on the first candidate with capacity, then wait and retry with backoff.

Candidates (GPU x region x cloud, in the spec's preference order, within max_price_per_hour) come from
gpujob.gpus.candidates.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

from gpujob import gpus, naming
from gpujob.apply.context import GPU_CEILING, JobContext
from gpujob.apply.progress import reporter_of
from gpujob.clock import Clock
from gpujob.errors import ProviderCapacityError
from gpujob.gpus import Candidate
from gpujob.images import cuda_from_tag
from gpujob.jobfile.model import JobSpec
from gpujob.live import LiveResource, PriceQuote
from gpujob.providers.base import LaunchRequest, Provider

BACKOFF_START_S = 15.0
BACKOFF_MAX_S = 300.0


def candidates(
    spec: JobSpec, *, region: str | None = None, quotes: list[PriceQuote] | None = None
) -> list[Candidate]:
    """Every (GPU, region, cloud) worth trying, best first. `region` pins it (network volume DC lock)."""
    from gpujob.profile import load_profile

    found = gpus.candidates(load_profile(spec.platform), spec.machine, quotes)
    if region is None:
        return found
    out: list[Candidate] = []
    for c in found:
        if c.region in (None, region):
            pinned = c.model_copy(update={"region": region})
            if pinned not in out:
                out.append(pinned)
    return out


async def create_with_fallback(
    provider: Provider,
    base: LaunchRequest,
    cands: list[Candidate],
    *,
    clock: Clock,
    note: Callable[[str], None],
    max_wait_s: float,
    wait_s: float | None = None,
) -> LiveResource:
    """Try each candidate; when all are out of capacity, wait (doubling) and go round again. With `wait_s`
    (machine.when_unavailable: wait) a platform that queues creates (RunPod's Deploy When Available) is
    asked to place the first candidate within it instead, billing nothing meanwhile; past it every
    candidate is tried once more, then the create fails (the next platform, if the file lists one).
    Where there is no queue, gpujob's own retries go on for `wait_s`."""
    if not cands:
        raise ProviderCapacityError(
            "no GPU candidate fits the spec (check machine.gpu, machine.regions and max_price_per_hour)",
            platform=provider.platform,
            call="create",
        )
    started = clock.now()
    delay = BACKOFF_START_S
    while True:
        refused: list[str] = []
        for i, cand in enumerate(cands):
            req = base.model_copy(
                update={"gpu_id": cand.platform_id, "region": cand.region, "cloud": cand.cloud or "secure"}
            )
            try:
                return await provider.create_machine(req)
            except ProviderCapacityError as exc:
                nxt = f"; next: {cands[i + 1].describe()}" if i + 1 < len(cands) else ""
                if getattr(exc, "status", None) == 403:
                    refused.append(cand.describe())
                    note(f"{cand.describe()} is not offered to this account (403){nxt}")
                else:
                    note(f"no capacity for {cand.describe()}{_cuda(base)}{nxt}")
        if len(refused) == len(cands):
            # Every pool said 403: waiting for capacity cannot change that.
            raise ProviderCapacityError(
                f"every candidate was refused to this account (403): {', '.join(refused)}",
                platform=provider.platform,
                call="create",
                hint="check the account's access (verification, spend limit, pool eligibility) in the "
                "console, or list other GPUs / regions / clouds in machine.gpu / machine.regions / machine.cloud",
            )
        queue = getattr(provider, "create_queued", None) if wait_s is not None else None
        if queue is not None and base.spot is not True and wait_s is not None:
            return await _queued(provider, queue, base, cands, wait_s=wait_s, note=note)
        if wait_s is not None:
            max_wait_s = wait_s
        waited = (clock.now() - started).total_seconds()
        if waited + delay > max_wait_s:
            raise ProviderCapacityError(
                f"no capacity on any of {len(cands)} candidate(s) after waiting {waited:.0f}s",
                platform=provider.platform,
                call="create",
                hint="add GPUs or regions to machine.gpu / machine.regions, raise max_price_per_hour, or re-run later"
                + (
                    f"; or use an image built for an older CUDA: only hosts that run CUDA {base.min_cuda} or "
                    "newer were asked for (RP9)"
                    if base.min_cuda
                    else ""
                ),
            )
        what = backoff_message(cands, delay)
        reporter = reporter_of(note)
        if reporter is None:
            note(what)
            await clock.sleep(delay)
        else:
            async with reporter.waiting(what, delay):
                await clock.sleep(delay)
        delay = min(delay * 2, BACKOFF_MAX_S)


def _request(base: LaunchRequest, cand: Candidate) -> LaunchRequest:
    return base.model_copy(
        update={"gpu_id": cand.platform_id, "region": cand.region, "cloud": cand.cloud or "secure"}
    )


async def _queued(
    provider: Provider,
    queue: Callable[..., Any],
    base: LaunchRequest,
    cands: list[Candidate],
    *,
    wait_s: float,
    note: Callable[[str], None],
) -> LiveResource:
    """Wait in the platform's queue for the first candidate; past `wait_s`, every candidate once more."""
    from gpujob.jobfile.rules import format_duration

    first = cands[0].describe()
    up_to = format_duration(timedelta(seconds=wait_s))
    note(
        f"no capacity on any candidate: waiting in RunPod's queue (Deploy When Available) for {first}, "
        f"up to {up_to}; nothing bills until the pod is placed"
    )
    said: set[int] = set()

    def progress(waited: float, total: float) -> None:
        step = int(waited // max(total / 10, 1.0))
        if step not in said:
            said.add(step)
            note(
                f"still waiting for capacity: {waited:.0f}s of {total:.0f}s in RunPod's queue, billing $0.00/h"
            )

    try:
        placed: LiveResource = await queue(_request(base, cands[0]), wait_s, progress)
        note(f"capacity came: RunPod placed the queued pod {placed.id}")
        return placed
    except ProviderCapacityError as exc:
        note(f"{exc}; trying every candidate once more")
    for cand in cands:
        try:
            return await provider.create_machine(_request(base, cand))
        except ProviderCapacityError:
            note(f"no capacity for {cand.describe()}")
    raise ProviderCapacityError(
        f"no capacity on any of {len(cands)} candidate(s) after waiting {up_to} in RunPod's queue "
        "(machine.when_unavailable: wait)",
        platform=provider.platform,
        call="create",
        hint="raise machine.wait_up_to, list more GPUs or regions, or add a fallback platform",
    )


def _cuda(req: LaunchRequest) -> str:
    """The host CUDA filter a refusal was under: it narrows the pool, so it is part of the reason."""
    return f" with host CUDA {req.min_cuda} or newer" if req.min_cuda else ""


def backoff_message(cands: list[Candidate], delay: float) -> str:
    """ "waiting 30s for capacity: 1× RTX4090 in EU-RO-1 full; next: ..." (what was full, what is next)."""
    names = [c.describe().split(" at $")[0] for c in cands]  # prices are in the per-candidate notes
    full = ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
    return f"waiting {delay:.0f}s for capacity: {full} full; next: {names[0]}"


def ceiling(ctx: JobContext) -> float | None:
    """The most the job's GPU may bill per hour for its file's running rate to stay within
    budget.max_hourly_usd (gpujob.plan.ceiling, from the plan apply carries); None: no cap."""
    top = ctx.extra.get(GPU_CEILING)
    return None if top is None else float(top)


def within_ceiling(ctx: JobContext, cands: list[Candidate]) -> list[Candidate]:
    """The candidates a create may take: none whose price would put the plan over its cap (the plan was
    judged on its first one). Said when some are left out; refused when none is left."""
    top = ceiling(ctx)
    if top is None:
        return cands
    kept = [c for c in cands if c.price_hour <= top + 1e-9]
    over = [c for c in cands if c not in kept]
    if over and kept:
        ctx.note(
            f"not tried (over the ${top:.2f}/h budget.max_hourly_usd leaves this GPU): "
            + ", ".join(c.describe() for c in over[:3])
            + (f" and {len(over) - 3} more" if len(over) > 3 else "")
        )
    if not kept:
        raise ProviderCapacityError(
            f"every GPU candidate is over the ${top:.2f}/h that budget.max_hourly_usd leaves this GPU",
            platform=ctx.spec.platform,
            call="create",
            hint="plan again (prices moved since the plan), raise budget.max_hourly_usd, or list a cheaper GPU",
        )
    return kept


def launch_request(ctx: JobContext, public_key: str) -> LaunchRequest:
    spec, m = ctx.spec, ctx.spec.machine
    top = ceiling(ctx)
    # `spot: prefer`'s on-demand fallback is held to this (gpujob.providers.runpod.spot.check_on_demand_price)
    price_cap = m.max_price_per_hour if top is None else min(m.max_price_per_hour or top, top)
    env = dict(spec.run.env) if spec.run else {}
    # The ownership marker (gpujob.naming): a pod reports its env back, so it says whose it is.
    env |= {naming.PROJECT_ENV: ctx.project, naming.OWNER_ENV: naming.owner_marker(ctx.project_label)}
    return LaunchRequest(
        name=ctx.machine_name,
        gpu_id=m.gpu[0],
        gpu_count=m.gpu_count,
        region=m.regions[0] if m.regions else None,
        cloud=m.cloud or "secure",
        spot=m.spot,
        max_price_per_hour=price_cap,
        image=m.image,
        template=m.template,
        container_disk_gb=m.container_disk_gb,
        volume_gb=spec.storage.volume_gb,
        mount_path=spec.storage.mount,
        network_volume_id=ctx.volume.id if ctx.volume is not None else None,
        public_ip=m.public_ip,
        auto_shutdown_hours=m.auto_shutdown.total_seconds() / 3600 if m.auto_shutdown else None,
        env=env,
        ssh_public_key=public_key,
        min_cuda=cuda_from_tag(m.image),  # RP9: a host whose driver runs the image's CUDA
        nodes=m.nodes,
    )
