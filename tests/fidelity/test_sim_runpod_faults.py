"""The simulator's new fault knobs driven through the real clients (real HTTP, real sshd pods): a spot
floor that moved, a bid refused as too low, a pool refused with 403, a community pod without ssh.direct
(with and without a published port 22), and v2 lists that come in pages."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from gpujob.apply.capacity import create_with_fallback
from gpujob.errors import ProviderCapacityError, ProviderError
from gpujob.gpus import Candidate
from gpujob.providers.base import LaunchRequest, VolumeRequest
from gpujob.providers.runpod.client import GraphQLRetired
from gpujob.providers.wait import Timeouts
from gpujob.sim.runpod_graphql import spot_floor
from tests.providers.conftest import Backend

pytestmark = pytest.mark.anyio

KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAILXGDN/SclOozk1xsDztpmhGiKkkrfQB9SKoO8dSIQQZ gpujob"
RTX, L40S = "NVIDIA GeForce RTX 4090", "NVIDIA L40S"


def _launch(**kw: object) -> LaunchRequest:
    base: dict[str, object] = {"name": "gpujob-f", "gpu_id": RTX, "image": "img", "ssh_public_key": KEY}
    return LaunchRequest.model_validate({**base, **kw})


def _cands(*ids: str) -> list[Candidate]:
    now = datetime(2026, 8, 20, tzinfo=UTC)
    return [
        Candidate(alias=g, platform_id=g, gpu_count=1, region=None, cloud="secure", spot=True, price_hour=1.0,
                  price_source="test", price_as_of=now)
        for g in ids
    ]  # fmt: skip


async def test_spot_bids_the_floor_the_simulator_reports_now(simg: Backend) -> None:
    simb = simg
    simb.sim.inject("spot_floor", gpu=RTX, factor=1.5)  # the market moved off the profile's price
    floor = spot_floor(simb.sim.engine, RTX)
    async with simb.open({"runpod"}) as p:
        if simg.graphql_gone:  # no floor to read, and no stale profile price bid in its place
            with pytest.raises(GraphQLRetired, match="HTTP 410"):
                await p["runpod"].create_machine(_launch(spot=True))
            assert simb.sim.engine.state.pods == {}
            return
        pod = await p["runpod"].create_machine(_launch(spot=True))
        assert pod.spot and pod.ssh is not None
        with simb.sim.engine.lock:
            assert simb.sim.engine.state.pods[pod.id].bid_per_gpu == floor
        await p["runpod"].terminate(pod)


async def test_bid_too_low_moves_to_the_next_candidate(simg: Backend) -> None:
    simb = simg
    simb.sim.inject("bid_too_low", gpu=RTX)
    notes: list[str] = []
    async with simb.open({"runpod"}) as p:
        pod = await create_with_fallback(
            p["runpod"],
            _launch(spot="prefer"),
            _cands(RTX, L40S),
            clock=simb.clock,
            note=notes.append,
            max_wait_s=60,
        )
        if simg.graphql_gone:  # prefer: no bid at all, the first candidate on-demand
            assert pod.gpu_id == RTX and not pod.spot and notes == []
        else:
            assert pod.gpu_id == L40S and pod.spot and "no capacity for" in notes[0]
        await p["runpod"].terminate(pod)


async def test_prefer_falls_back_to_on_demand_only_within_max_price(simg: Backend) -> None:
    # RTX 4090: spot $0.34/h fits under $0.50/h, on-demand $0.69/h does not
    async with simg.open({"runpod"}) as p:
        if not simg.graphql_gone:
            pod = await p["runpod"].create_machine(_launch(spot="prefer", max_price_per_hour=0.5))
            assert pod.spot
            await p["runpod"].terminate(pod)
            return
        with pytest.raises(ProviderCapacityError, match="over max_price_per_hour"):
            await p["runpod"].create_machine(_launch(spot="prefer", max_price_per_hour=0.5))
        assert simg.sim.engine.state.pods == {}


async def test_403_pool_is_skipped(simb: Backend) -> None:
    simb.sim.inject("http_error", status=403, path="/v2/pods", method="POST", count=1)
    notes: list[str] = []
    async with simb.open({"runpod"}) as p:
        pod = await create_with_fallback(
            p["runpod"], _launch(), _cands(RTX, L40S), clock=simb.clock, note=notes.append, max_wait_s=60
        )
        assert pod.gpu_id == L40S and "(403)" in notes[0]
        await p["runpod"].terminate(pod)


async def test_community_pod_without_ssh_direct_is_reached_through_runtime_ports(simb: Backend) -> None:
    simb.sim.inject("no_direct_ssh", count=1)
    async with simb.open({"runpod"}) as p:
        pod = await p["runpod"].create_machine(_launch(cloud="community"))
        with simb.sim.engine.lock:
            port = simb.sim.engine.state.pods[pod.id].ssh_port
        assert pod.ssh is not None and (pod.ssh.host, pod.ssh.port) == ("127.0.0.1", port)
        await p["runpod"].terminate(pod)


async def test_no_public_port_22_fails_fast_instead_of_billing_for_twenty_minutes(simb: Backend) -> None:
    simb.sim.inject("no_direct_ssh", count=1, public_port=False)
    simb.timeouts = Timeouts(no_ssh_grace=0.5)
    async with simb.open({"runpod"}) as p:
        with pytest.raises(ProviderError, match="no public port 22"):
            await p["runpod"].create_machine(_launch(cloud="community"))
        (pod,) = [r for r in await p["runpod"].list_resources() if r.kind == "pod"]
        assert pod.status == "running"  # still there, billing: the message says to remove it
        await p["runpod"].terminate(pod)
    assert sum(simb.clock.sleeps) < 30


async def test_the_client_follows_the_simulator_s_pages(
    simb: Backend, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with simb.open({"runpod"}) as p:
        for i in range(3):
            await p["runpod"].create_volume(VolumeRequest(name=f"gpujob-v{i}", size_gb=10, region="US-KS-2"))
        monkeypatch.setattr("gpujob.providers.runpod.client.V2_PAGE_LIMIT", 2)
        names = sorted(r.name for r in await p["runpod"].list_resources() if r.kind == "network_volume")
    assert names == ["gpujob-v0", "gpujob-v1", "gpujob-v2"]
