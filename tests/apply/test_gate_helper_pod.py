"""The teardown gate's temporary pod (gpujob/apply/teardown_helper.py), against fakes: a network volume
no pod mounts is looked at through the cheapest single-GPU on-demand pod that can mount it in its data
center, created through the capacity fallback, and terminated after the look, also when it fails. What
it starts, what it says, and what it refuses when no pod can be had. tests/e2e prove the same path
against the simulator and sshd."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from gpujob import naming
from gpujob.apply.teardown_helper import through_helper
from gpujob.errors import GateError, ProviderError
from gpujob.live import LiveResource, PriceQuote
from gpujob.plan.model import ActionKind
from gpujob.profile import load_profile
from gpujob.providers.base import LaunchRequest
from tests.apply.fakes import FakeProvider, action
from tests.apply.test_gate import guard, world
from tests.owners import PROJECT

DELETE = ("toy", ActionKind.DELETE_VOLUME, "network_volume")
GPUS = load_profile("runpod").gpus
# Live on-demand prices that put the profile's GPUs in reverse order: the job file's own GPUs (RTX4090,
# A6000) are not among the five cheapest, so a helper that picked from them would show.
CHEAPEST = [g.platform_id for g in reversed(GPUS)][:5]
AS_OF = datetime(2026, 11, 29, tzinfo=UTC)


def _quote(gpu_id: str, price: float, **kw: Any) -> PriceQuote:
    return PriceQuote(
        platform="runpod", gpu_id=gpu_id, cloud="secure", price_hour=price, source="test", as_of=AS_OF, **kw
    )


def _quotes() -> list[PriceQuote]:
    out = [_quote(g.platform_id, 1.0 + i / 10, available=True) for i, g in enumerate(reversed(GPUS))]
    # the cheapest has a single GPU in stock, which is all the helper asks for
    out.append(_quote(CHEAPEST[0], 1.0, gpu_count=2, available=False))
    # a spot offer cheaper than every on-demand one: the helper is never a spot pod (it must not be
    # preempted half way through the look)
    out.append(_quote(GPUS[0].platform_id, 0.01, spot=True, available=True))
    return out


class Provider(FakeProvider):
    """The fake provider with live quotes, every create request kept, and a terminate that may fail."""

    def __init__(self) -> None:
        super().__init__()
        self.live: list[PriceQuote] | Exception = _quotes()
        self.requests: list[LaunchRequest] = []
        self.terminate_fails: str | None = None
        self.first_create_takes_s = 0.0
        self.clock: Any = None

    async def quotes(self, counts: object = (1,)) -> list[PriceQuote]:
        if isinstance(self.live, Exception):
            raise self.live
        return self.live

    async def create_machine(self, request: LaunchRequest) -> LiveResource:
        self.requests.append(request)
        if len(self.requests) == 1 and self.first_create_takes_s:
            self.clock.t += timedelta(seconds=self.first_create_takes_s)
        return await super().create_machine(request)

    async def terminate(self, resource: LiveResource) -> None:
        if self.terminate_fails is not None:
            raise ProviderError(self.terminate_fails, platform="runpod", call="terminate")
        await super().terminate(resource)


def helper_world(tmp_path: Path, *, region: str | None = "EU-RO-1", **spec: Any) -> tuple[Any, Provider]:
    """The job's volume `vol1` in `region` with one checkpoint file on it, and no pod that mounts it."""
    ctx, old, _ = world(tmp_path, files={"s1.ckpt": b"one"}, volume=True, **spec)
    prov = Provider()
    prov.clock = ctx.clock
    prov.resources["vol1"] = ctx.volume = old.resources["vol1"].model_copy(update={"region": region})
    ctx.provider = prov
    ctx.machine = None
    return ctx, prov


def notes(ctx: Any) -> list[str]:
    return [m for _, kind, m in ctx.hooks.events if kind == "note"]


def pods(prov: Provider) -> list[LiveResource]:
    return [r for r in prov.resources.values() if r.kind == "pod"]


def test_the_helper_is_the_cheapest_single_gpu_on_demand_pod_that_mounts_the_volume_in_its_data_center(
    tmp_path: Path,
) -> None:
    # The job file wants 2 nodes of 2 spot GPUs of its own kinds in another region, capped at $0.05/h,
    # with a disk and a public IP of its own: none of it is what a pod that only looks at the volume needs.
    ctx, prov = helper_world(
        tmp_path,
        region="US-KS-2",
        machine={"gpu": ["RTX4090", "A6000"], "gpu_count": 2, "nodes": 2, "spot": True, "regions": ["EU-RO-1"],
                 "image": "img", "public_ip": "dynamic", "max_price_per_hour": 0.05},
        storage={"volume_gb": 20},
    )  # fmt: skip
    assert "final pull: 1 checkpoint file(s)" in guard(ctx, action(*DELETE, resource_id="vol1"))
    (req,) = prov.requests
    assert (req.gpu_id, req.gpu_count, req.nodes, req.region, req.spot) == (
        CHEAPEST[0],
        1,
        1,
        "US-KS-2",
        False,
    )
    assert req.name == naming.helper_name("toy", PROJECT)
    assert (req.network_volume_id, req.volume_gb, req.public_ip) == ("vol1", None, None)
    assert req.ssh_public_key == "ssh-ed25519 AAAAFAKE gpujob"  # the project's key: gpujob can log in
    assert pods(prov) == []  # terminated after the look


def test_a_stale_volume_is_looked_at_through_a_helper_that_mounts_it_not_the_jobs_current_one(
    tmp_path: Path,
) -> None:
    ctx, prov = helper_world(tmp_path)
    stale = prov.resources["vol1"]  # the job's old volume (its job file names another one now)
    ctx.volume = prov._save(stale.model_copy(update={"id": "vol2", "name": f"{stale.name}-new"}))
    guard(ctx, action(*DELETE, resource_id="vol1"))
    assert [r.network_volume_id for r in prov.requests] == ["vol1"]


def test_a_volume_without_a_region_gets_its_helper_in_the_job_files_first_region(tmp_path: Path) -> None:
    ctx, prov = helper_world(
        tmp_path,
        region=None,
        machine={"gpu": ["RTX4090"], "regions": ["CA-MTL-1", "EU-RO-1"], "image": "img"},
    )
    guard(ctx, action(*DELETE, resource_id="vol1"))
    assert [r.region for r in prov.requests] == ["CA-MTL-1"]
    # no region anywhere: RunPod places it
    ctx, prov = helper_world(
        tmp_path / "b", region=None, machine={"gpu": ["RTX4090"], "regions": [], "image": "img"}
    )
    guard(ctx, action(*DELETE, resource_id="vol1"))
    assert [(r.gpu_id, r.region) for r in prov.requests] == [(CHEAPEST[0], None)]


def test_without_live_prices_the_helper_is_the_profiles_cheapest(tmp_path: Path) -> None:
    ctx, prov = helper_world(tmp_path)
    prov.live = ProviderError("quotes are down", platform="runpod", call="quotes")
    guard(ctx, action(*DELETE, resource_id="vol1"))
    cheapest = min(GPUS, key=lambda g: g.price_hour)
    assert [r.gpu_id for r in prov.requests] == [cheapest.platform_id]


def test_the_helper_is_said_before_it_starts_and_after_it_is_terminated(tmp_path: Path) -> None:
    ctx, prov = helper_world(tmp_path)
    guard(ctx, action(*DELETE, resource_id="vol1"))
    (req,) = prov.requests
    (helper_id,) = [rid for call, rid in prov.calls if call == "terminate"]
    said = notes(ctx)
    assert said[0] == (
        f"no pod mounts {ctx.volume.name}: starting a temporary pod in EU-RO-1 to look at it (and pull its "
        "checkpoints) before deleting it"
    )
    assert said[-1] == f"terminated the temporary pod {req.name} ({helper_id})"


def test_a_helper_that_cannot_be_terminated_is_said_to_bill(tmp_path: Path) -> None:
    ctx, prov = helper_world(tmp_path)
    prov.terminate_fails = "502 Bad Gateway\n<html>the body</html>"
    # the look's answer stands: the volume's files were pulled and verified
    assert "final pull: 1" in guard(ctx, action(*DELETE, resource_id="vol1"))
    (helper,) = pods(prov)
    assert notes(ctx)[-1] == (
        f"the temporary pod {helper.name} ({helper.id}) could not be terminated and may bill: "
        "runpod terminate: 502 Bad Gateway; terminate it in the console"
    )


def test_a_helper_that_cannot_be_created_refuses_the_delete_and_says_how_to_go_on(tmp_path: Path) -> None:
    ctx, prov = helper_world(tmp_path)
    prov.no_capacity = set(CHEAPEST)
    # the first create call alone takes 586 s: the 10 minutes of waiting for capacity count from the start
    prov.first_create_takes_s = 586.0
    ctx.rerun = "gpujob destroy jobs/toy.yaml"
    delete = action(*DELETE, resource_id="vol1")
    ctx.todo = [action("toy", ActionKind.TERMINATE, resource_id="pod9"), delete]
    with pytest.raises(GateError) as err:
        guard(ctx, delete)
    assert str(err.value) == (
        f"{delete.id}: no pod mounts {ctx.volume.name}, and a temporary pod to check it could not be "
        "created: runpod create: no capacity on any of 5 candidate(s) after waiting 586s"
    )
    assert err.value.hint == (
        "set state: running in the job file and `gpujob apply` (a pod mounts the volume again), then "
        "`gpujob destroy jobs/toy.yaml --approve toy.pod.terminate --approve toy.network_volume.delete-volume`"
    )
    # the five cheapest, once each: the next round would end past the 10 minutes, so it is not waited for
    assert [r.gpu_id for r in prov.requests] == CHEAPEST
    assert ctx.clock.slept == [] and pods(prov) == []
    assert sum(n.startswith("no capacity for ") for n in notes(ctx)) == 5


def test_a_volume_on_a_platform_without_helper_pods_is_refused(tmp_path: Path) -> None:
    ctx, prov = helper_world(tmp_path)
    ctx.spec = ctx.spec.model_copy(update={"platform": "paperspace"})
    delete = action(*DELETE, resource_id="vol1")
    with pytest.raises(GateError) as err:
        asyncio.run(through_helper(ctx, delete, ctx.volume))
    assert str(err.value) == f"{delete.id}: {ctx.volume.name} cannot be mounted by gpujob to check it"
    assert prov.requests == [] and notes(ctx) == []
