"""The teardown gate's way to a network volume no pod mounts: a temporary helper pod, the cheapest that can
mount it in its data center, terminated after the look.
"""

from __future__ import annotations

from gpujob import gpus, naming
from gpujob.apply import gate
from gpujob.apply.capacity import create_with_fallback, launch_request
from gpujob.apply.context import JobContext
from gpujob.apply.teardown_look import inspect_disk, on_mount
from gpujob.errors import GateError, GpujobError, ProviderError
from gpujob.live import LiveResource
from gpujob.plan.model import Action


async def through_helper(ctx: JobContext, action: Action, vol: LiveResource) -> str:
    """No pod mounts the volume: bring up the cheapest one that can, look and pull, terminate it."""
    if ctx.spec.platform != "runpod":
        raise GateError(f"{action.id}: {vol.name} cannot be mounted by gpujob to check it")
    ctx.note(
        f"no pod mounts {vol.name}: starting a temporary pod in {vol.region} to look at it (and pull its "
        "checkpoints) before deleting it"
    )
    try:
        helper = await _create_helper(ctx, vol)
    except GpujobError as exc:
        raise GateError(
            f"{action.id}: no pod mounts {vol.name}, and a temporary pod to check it could not be created: "
            f"{str(exc).splitlines()[0]}",
            hint=(
                "set state: running in the job file and `gpujob apply` (a pod mounts the volume again), "
                f"then `{ctx.rerun} {gate.approve_flags(a.id for a in ctx.todo if a.gated)}`"
            ),
        ) from exc
    try:
        return await inspect_disk(
            ctx,
            action,
            helper,
            lambda listing: on_mount(listing, helper, ctx),
            evidence_for=None,
            through=f"temporary pod {helper.name}",
        )
    finally:
        try:
            await ctx.provider.terminate(helper)
            ctx.note(f"terminated the temporary pod {helper.name} ({helper.id})")
        except ProviderError as exc:
            ctx.note(
                f"the temporary pod {helper.name} ({helper.id}) could not be terminated and may bill: "
                f"{str(exc).splitlines()[0]}; terminate it in the console"
            )


async def _create_helper(ctx: JobContext, vol: LiveResource) -> LiveResource:
    from gpujob.profile import load_profile

    profile = load_profile(ctx.spec.platform)
    region = vol.region or (ctx.spec.machine.regions[0] if ctx.spec.machine.regions else None)
    any_gpu = ctx.spec.machine.model_copy(
        update={
            "gpu": [g.alias for g in profile.gpus],
            "gpu_count": 1,
            "regions": [region] if region else [],
            "spot": False,
            "max_price_per_hour": None,
        }
    )
    try:
        quotes = await ctx.provider.quotes()
    except ProviderError:
        quotes = []
    cands = sorted(gpus.candidates(profile, any_gpu, quotes), key=lambda c: c.price_hour)
    _, public_key = ctx.ssh.ensure_project_key(ctx.state_dir)
    base = launch_request(ctx, public_key).model_copy(
        update={
            "name": naming.helper_name(ctx.spec.name, ctx.project),
            # one pod of one GPU, whatever the job's machine.gpu_count and machine.nodes: the candidates
            # were priced for that, and a look needs no more
            "gpu_count": 1,
            "nodes": 1,
            "spot": False,
            "volume_gb": None,
            "network_volume_id": vol.id,
            "public_ip": None,
        }
    )
    return await create_with_fallback(
        ctx.provider, base, cands[:5], clock=ctx.clock, note=ctx.note, max_wait_s=600.0
    )
