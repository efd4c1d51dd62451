"""The provider clients against the local simulator's faults: the same code paths the respx fault
tests drive, now over real HTTP with the simulator deciding what happened (so "created but 500" really
created one pod, a dropped connection really closed the socket)."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
import pytest

from gpujob.errors import (
    ProviderAuthError,
    ProviderBalanceError,
    ProviderCapacityError,
    ProviderUnavailable,
)
from gpujob.providers.base import LaunchRequest, Provider, ZeroGpuError
from gpujob.providers.http import DEFAULT_TIMEOUT
from gpujob.providers.registry import open_providers, provider_for
from gpujob.providers.wait import Timeouts
from tests.providers.conftest import PS_CANARY, RP_CANARY, Backend

pytestmark = pytest.mark.anyio

RTX = "NVIDIA GeForce RTX 4090"
POD = LaunchRequest(name="gpujob-bert", gpu_id=RTX, image="img", volume_gb=20, region="US-KS-2")
MACHINE = LaunchRequest(name="gpujob-bert", gpu_id="A4000", template="tkni3aa4", region="ny2", volume_gb=50)


@asynccontextmanager
async def recording(b: Backend, platform: str, **kw: Any) -> AsyncIterator[tuple[Provider, list[str]]]:
    """A provider whose every request (method, path, query) is recorded on the wire."""
    seen: list[str] = []

    async def hook(request: httpx.Request) -> None:
        seen.append(f"{request.method} {request.url.path}?{request.url.query.decode()}")

    async with httpx.AsyncClient(timeout=DEFAULT_TIMEOUT, event_hooks={"request": [hook]}) as http:
        kw.setdefault("policy", b.policy)
        yield provider_for(platform, http, clock=b.clock, env=b.env, **kw), seen


def live(b: Backend, table: str, name: str) -> list[str]:
    """Ids of the simulator's live objects with that name (pods or machines)."""
    with b.sim.engine.lock:
        rows = getattr(b.sim.engine.state, table).values()
        return [r.id for r in rows if r.name == name and r.ended_at is None]


async def test_paperspace_listing_follows_every_page(simb: Backend, monkeypatch: pytest.MonkeyPatch) -> None:
    headers = {"Authorization": f"Bearer {simb.env['PAPERSPACE_API_KEY']}"}
    with httpx.Client(base_url=simb.env["GPUJOB_PAPERSPACE_API_URL"], headers=headers) as ps:
        for i in range(125):  # never started: no processes, just machines
            body = {"name": f"m{i:03d}", "machineType": "A4000", "templateId": "t0nspur5", "diskSize": 50}
            r = ps.post("/machines", json={**body, "region": "ny2", "startOnCreate": False})
            assert r.status_code == 200, r.text
    for limit, pages in ((120, 2), (50, 3)):  # the real maximum page size, then a smaller one
        monkeypatch.setattr("gpujob.providers.paperspace.client.PAGE_LIMIT", limit)
        async with recording(simb, "paperspace") as (ps_provider, seen):
            listed = await ps_provider.list_resources()
        machines = sorted(r.name for r in listed if r.kind == "machine")
        assert machines == [f"m{i:03d}" for i in range(125)]
        machine_pages = [s for s in seen if s.startswith("GET /v1/machines?")]
        assert len(machine_pages) == pages and all(f"limit={limit}" in s for s in machine_pages)
        assert all("after=" in s for s in machine_pages[1:])


async def test_429_with_retry_after_is_ridden_out(simb: Backend) -> None:
    simb.sim.inject("http_error", status=429, retry_after=1, count=3, path="/v2/pods", method="GET")
    async with simb.open({"runpod"}) as p:
        await p["runpod"].list_resources()
    assert len(simb.clock.sleeps) == 3 and all(1 <= s <= 1.5 for s in simb.clock.sleeps)
    assert simb.sim.control("faults")["active"] == []


async def test_5xx_storm_short_is_survived_long_is_unavailable(simb: Backend) -> None:
    simb.sim.inject("http_error", status=503, count=4, path="/v1/machines", method="GET")
    async with simb.open({"paperspace"}) as p:
        await p["paperspace"].list_resources()
        assert len(simb.clock.sleeps) == 4
        assert simb.clock.sleeps == sorted(simb.clock.sleeps)  # backoff grows
        simb.sim.inject("http_error", status=500, count=None, path="/v1/machines", method="GET")
        with pytest.raises(ProviderUnavailable, match=r"GET /v1/machines.*gave up after 6 attempt"):
            await p["paperspace"].list_resources()
    simb.sim.inject("clear")


async def test_dropped_connections_retry_reads_and_never_double_create(simb: Backend) -> None:
    simb.sim.inject("drop", count=2, path="/v2/pods", method="GET")
    fast_adopt = Timeouts(adopt=1.0, interval=0.25)
    async with recording(simb, "runpod", timeouts=fast_adopt) as (rp, seen):
        assert await rp.list_resources() == []
        assert sum(s.startswith("GET /v2/pods?") for s in seen) == 3
        # The create's connection drops before the server acted: nothing exists under the name after
        # the listing-lag window, so gpujob creates exactly once more.
        simb.sim.inject("drop", count=1, path="/v2/pods", method="POST")
        pod = await rp.create_machine(POD)
    assert live(simb, "pods", "gpujob-bert") == [pod.id]
    assert sum(s.startswith("POST /v2/pods?") for s in seen) == 2


async def test_create_500_but_created_is_adopted_on_every_create_path(simb: Backend) -> None:
    async with simb.open({"runpod", "paperspace"}) as p:
        simb.sim.inject("create_500_but_created")
        pod = await p["runpod"].create_machine(POD)
        assert live(simb, "pods", "gpujob-bert") == [pod.id] and pod.status == "running"

        simb.sim.inject("create_500_but_created")  # GraphQL: HTTP 200 + INTERNAL_SERVER_ERROR
        spot = await p["runpod"].create_machine(POD.model_copy(update={"name": "gpujob-s", "spot": True}))
        assert live(simb, "pods", "gpujob-s") == [spot.id] and spot.spot

        simb.sim.inject("create_500_but_created")
        m = await p["paperspace"].create_machine(MACHINE)
        assert live(simb, "machines", "gpujob-bert") == [m.id] and m.status == "running"


async def test_capacity_is_typed_and_creates_nothing(simb: Backend) -> None:
    async with simb.open({"runpod", "paperspace"}) as p:
        rp, ps = p["runpod"], p["paperspace"]
        simb.sim.inject("capacity", gpu=RTX)
        with pytest.raises(ProviderCapacityError, match="no capacity"):
            await rp.create_machine(POD)
        simb.sim.inject("capacity", gpu=RTX)
        with pytest.raises(ProviderCapacityError, match="no longer any instances"):
            await rp.create_machine(POD.model_copy(update={"spot": True, "bid_per_gpu": 0.5}))
        assert live(simb, "pods", "gpujob-bert") == []

        simb.sim.inject("capacity", gpu="A4000", region="ny2")
        with pytest.raises(ProviderCapacityError, match="not available in ny2"):
            await ps.create_machine(MACHINE)  # the availability check sees it first ...
        with pytest.raises(ProviderCapacityError, match="Out of capacity"):
            await ps.create_machine(MACHINE.model_copy(update={"region": None}))  # ... the create too
        assert live(simb, "machines", "gpujob-bert") == []
    assert simb.sim.control("faults")["active"] == []


async def test_zero_gpu_restart_is_typed(simb: Backend) -> None:
    async with simb.open({"runpod"}) as p:
        rp = p["runpod"]
        pod = await rp.create_machine(POD)
        stopped = await rp.stop(pod)
        simb.sim.inject("zero_gpu", pod_id=pod.id)
        with pytest.raises(ZeroGpuError, match="zero GPUs"):
            await rp.start(stopped)
        (seen,) = [r for r in await rp.list_resources() if r.id == pod.id]
        assert seen.status == "running" and seen.gpu_count == 0 and seen.attributes["zero_gpu"] is True


async def test_zero_gpu_on_spot_resume_is_typed(simb: Backend) -> None:
    async with simb.open({"runpod"}) as p:
        rp = p["runpod"]
        pod = await rp.create_machine(POD.model_copy(update={"spot": True, "bid_per_gpu": 0.4}))
        stopped = await rp.stop(pod)
        simb.sim.inject("zero_gpu", pod_id=pod.id)
        with pytest.raises(ZeroGpuError, match="no free GPUs"):
            await rp.start(stopped)  # podBidResume is refused: the old host has no free GPU
        still = await rp.get("pod", pod.id)
        assert still is not None and still.status == "stopped"


async def test_bad_key_and_low_balance_are_typed_and_never_leak(
    simb: Backend, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    wrong = {**simb.env, "RUNPOD_API_KEY": RP_CANARY, "PAPERSPACE_API_KEY": PS_CANARY}
    async with open_providers({"runpod", "paperspace"}, clock=simb.clock, env=wrong) as p:
        for platform, var, key in (
            ("runpod", "RUNPOD_API_KEY", RP_CANARY),
            ("paperspace", "PAPERSPACE_API_KEY", PS_CANARY),
        ):
            with pytest.raises(ProviderAuthError) as info:
                await p[platform].list_resources()
            assert var in (info.value.hint or "") and "HTTP 401" in str(info.value)
            assert key not in info.value.render() + caplog.text
        with pytest.raises(ProviderAuthError):  # GraphQL answers a bad key with HTTP 401 too
            await p["runpod"].create_machine(POD.model_copy(update={"spot": True, "bid_per_gpu": 0.5}))

    simb.sim.inject("low_balance")
    async with simb.open({"runpod", "paperspace"}) as p:
        with pytest.raises(ProviderBalanceError, match="HTTP 402"):
            await p["runpod"].create_machine(POD)
        with pytest.raises(ProviderBalanceError, match="HTTP 402"):
            await p["paperspace"].create_machine(MACHINE)
    assert live(simb, "pods", "gpujob-bert") == live(simb, "machines", "gpujob-bert") == []
