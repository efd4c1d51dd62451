"""respx-only fault tests: retries, pacing, ambiguous creates, typed errors, the canary key."""

from __future__ import annotations

import logging

import httpx
import pytest
import respx

from gpujob.errors import (
    ProviderAuthError,
    ProviderBalanceError,
    ProviderCapacityError,
    ProviderConflict,
    ProviderError,
    ProviderNotFound,
    ProviderUnavailable,
)
from gpujob.providers.base import LaunchRequest, NoEffectError, ZeroGpuError
from gpujob.providers.registry import open_providers
from gpujob.providers.runpod.client import PoolRefused
from tests.providers.conftest import FAKE_ENV, PS_CANARY, RP_CANARY, FakeClock
from tests.providers.provider_fakes import PAPERSPACE, RUNPOD, PaperspaceFake, RunPodFake, problem

pytestmark = pytest.mark.anyio
PODS = f"{RUNPOD}/v2/pods"
LAUNCH = LaunchRequest(name="gpujob-bert", gpu_id="NVIDIA GeForce RTX 4090", image="img", volume_gb=20)


async def test_429_honours_retry_after(router: respx.Router, clock: FakeClock) -> None:
    route = router.get(PODS).mock(
        side_effect=[
            httpx.Response(
                429, headers={"Retry-After": "7"}, json={"title": "Too Many Requests", "status": 429}
            ),
            httpx.Response(200, json={"pods": []}),
        ]
    )
    async with open_providers({"runpod"}, clock=clock, env=FAKE_ENV) as p:
        assert await p["runpod"].client.list_pods() == []  # type: ignore[attr-defined]
    assert route.call_count == 2
    assert len(clock.sleeps) == 1 and 7 <= clock.sleeps[0] < 8


async def test_5xx_and_timeouts_retry_with_growing_backoff(router: respx.Router, clock: FakeClock) -> None:
    route = router.get(PODS).mock(
        side_effect=[
            httpx.Response(503),
            httpx.ReadTimeout("slow"),
            httpx.RemoteProtocolError("dropped"),
            httpx.Response(502),
            httpx.Response(200, json={"pods": []}),
        ]
    )
    async with open_providers({"runpod"}, clock=clock, env=FAKE_ENV) as p:
        await p["runpod"].client.list_pods()  # type: ignore[attr-defined]
    assert route.call_count == 5 and len(clock.sleeps) == 4
    ceilings = [1, 2, 4, 8]
    assert all(c / 2 <= s <= c for s, c in zip(clock.sleeps, ceilings, strict=True))


async def test_retries_spent_is_unavailable(router: respx.Router, clock: FakeClock) -> None:
    router.get(PODS).mock(
        return_value=httpx.Response(500, json={"title": "x", "status": 500, "detail": "boom"})
    )
    async with open_providers({"runpod"}, clock=clock, env=FAKE_ENV) as p:
        with pytest.raises(ProviderUnavailable) as info:
            await p["runpod"].list_resources()
    assert "GET /v2/pods" in str(info.value) and "boom" in str(info.value) and "attempt" in str(info.value)


async def test_pacer_slows_down_before_429(router: respx.Router, clock: FakeClock) -> None:
    limit = '"minute";r=0;t=12, "hour";r=2800;t=1812, "day";r=49500;t=45012'
    route = router.get(PODS).mock(
        return_value=httpx.Response(200, json={"pods": []}, headers={"RateLimit": limit})
    )
    async with open_providers({"runpod"}, clock=clock, env=FAKE_ENV) as p:
        await p["runpod"].client.list_pods()  # type: ignore[attr-defined]
        assert clock.sleeps == []
        await p["runpod"].client.list_pods()  # type: ignore[attr-defined]
    assert route.call_count == 2 and clock.sleeps == [12]


async def test_exhausted_hour_window_fails_without_sending(router: respx.Router, clock: FakeClock) -> None:
    limit = '"minute";r=50;t=12, "hour";r=0;t=1812'
    route = router.get(PODS).mock(
        return_value=httpx.Response(200, json={"pods": []}, headers={"RateLimit": limit})
    )
    async with open_providers({"runpod"}, clock=clock, env=FAKE_ENV) as p:
        await p["runpod"].client.list_pods()  # type: ignore[attr-defined]
        with pytest.raises(ProviderUnavailable, match="resets in 1812s"):
            await p["runpod"].client.list_pods()  # type: ignore[attr-defined]
    assert route.call_count == 1 and clock.sleeps == []


@pytest.mark.parametrize(
    "failure", [httpx.Response(500, json={"detail": "read-back failed"}), httpx.ReadTimeout("lost")]
)
async def test_create_unknown_outcome_adopts_existing_pod(
    router: respx.Router, clock: FakeClock, failure: object
) -> None:
    fake = RunPodFake(router)

    def created_then_failed(request: httpx.Request) -> httpx.Response:
        fake.create_pod(request)  # the server commits the pod ...
        if isinstance(failure, Exception):
            raise failure
        return failure  # type: ignore[return-value]  # ... then answers 500 / never answers

    post = router.post(PODS).mock(side_effect=created_then_failed)
    async with open_providers({"runpod"}, clock=clock, env=FAKE_ENV) as p:
        pod = await p["runpod"].create_machine(LAUNCH)
    assert post.call_count == 1 and len(fake.pods) == 1
    assert pod.id == next(iter(fake.pods)) and pod.status == "running"


async def test_create_unknown_outcome_and_absent_creates_once_more(
    router: respx.Router, clock: FakeClock
) -> None:
    fake = RunPodFake(router)
    post = router.post(PODS).mock(side_effect=[httpx.Response(502), fake.create_pod])
    async with open_providers({"runpod"}, clock=clock, env=FAKE_ENV) as p:
        pod = await p["runpod"].create_machine(LAUNCH)
    assert post.call_count == 2 and list(fake.pods) == [pod.id]
    assert sum(clock.sleeps[:7]) >= 30  # looked the name up over the whole listing-lag window first


async def test_connect_error_on_create_is_safe_to_retry(router: respx.Router, clock: FakeClock) -> None:
    fake = RunPodFake(router)
    post = router.post(PODS).mock(side_effect=[httpx.ConnectError("refused"), fake.create_pod])
    async with open_providers({"runpod"}, clock=clock, env=FAKE_ENV) as p:
        await p["runpod"].create_machine(LAUNCH)
    assert post.call_count == 2 and len(fake.pods) == 1


@pytest.mark.parametrize(
    ("status", "detail", "error"),
    [
        (400, "There is no capacity for this GPU type in the selected data centers", ProviderCapacityError),
        (400, "gpu.count exceeds maxCount for this cloud", ProviderError),
        (402, "insufficient balance", ProviderBalanceError),
        (401, "missing bearer token", ProviderAuthError),
        (403, "access denied", PoolRefused),  # v2 create guidance: "skip this candidate, keep going"
        (404, "resource not found", ProviderNotFound),
        (409, "action not valid for current pod status", ProviderConflict),
    ],
)
async def test_v2_errors_are_typed(
    router: respx.Router, clock: FakeClock, status: int, detail: str, error: type[ProviderError]
) -> None:
    router.post(PODS).mock(return_value=problem(status, detail))
    async with open_providers({"runpod"}, clock=clock, env=FAKE_ENV) as p:
        with pytest.raises(ProviderError) as info:
            await p["runpod"].create_machine(LAUNCH)
    assert type(info.value) is error
    text = str(info.value)
    assert text.startswith(f"runpod POST /v2/pods: HTTP {status}: ") and detail in text
    assert info.value.hint
    if status == 401:
        assert "RUNPOD_API_KEY" in info.value.hint


async def test_graphql_errors_in_http_200(router: respx.Router, clock: FakeClock) -> None:
    msg = "There are no longer any instances available with the requested specifications. Please refresh."
    router.post(f"{RUNPOD}/graphql").mock(
        side_effect=[
            httpx.Response(
                200,
                json={
                    "errors": [{"message": msg, "path": ["podRentInterruptable"]}],
                    "data": {"podRentInterruptable": None},
                },
            ),
            httpx.Response(200, json={"errors": [{"message": "Something else went wrong"}], "data": None}),
        ]
    )
    spot = LAUNCH.model_copy(update={"spot": True, "bid_per_gpu": 0.3})
    async with open_providers({"runpod"}, clock=clock, env=FAKE_ENV) as p:
        with pytest.raises(ProviderCapacityError, match="no longer any instances"):
            await p["runpod"].create_machine(spot)
        with pytest.raises(ProviderError, match="Something else went wrong"):
            await p["runpod"].create_machine(spot)


async def test_start_that_does_nothing_is_detected(router: respx.Router, clock: FakeClock) -> None:
    fake = RunPodFake(router)
    async with open_providers({"runpod"}, clock=clock, env=FAKE_ENV) as p:
        pod = await p["runpod"].create_machine(LAUNCH)
        stopped = await p["runpod"].stop(pod)
        fake.start_noop = True
        with pytest.raises(NoEffectError, match="still EXITED"):
            await p["runpod"].start(stopped)


async def test_terminate_that_leaves_the_pod_is_detected(router: respx.Router, clock: FakeClock) -> None:
    fake = RunPodFake(router)
    async with open_providers({"runpod"}, clock=clock, env=FAKE_ENV) as p:
        pod = await p["runpod"].create_machine(LAUNCH)
        fake.terminate_noop = True  # 204, yet the pod is still listed: it may still bill
        with pytest.raises(NoEffectError, match=f"pod {pod.id} is still RUNNING"):
            await p["runpod"].terminate(pod)
        fake.terminate_noop = False
        await p["runpod"].terminate(pod)  # and a real terminate returns once the pod is gone


async def test_zero_gpu_restart_is_typed(router: respx.Router, clock: FakeClock) -> None:
    fake = RunPodFake(router)
    async with open_providers({"runpod"}, clock=clock, env=FAKE_ENV) as p:
        pod = await p["runpod"].create_machine(LAUNCH)
        stopped = await p["runpod"].stop(pod)
        fake.zero_gpu_on_start = True
        with pytest.raises(ZeroGpuError):
            await p["runpod"].start(stopped)
        listed = [r for r in await p["runpod"].list_resources() if r.id == pod.id]
    assert listed[0].attributes.get("zero_gpu") is True


# ---- Paperspace


async def test_paperspace_pagination_over_three_pages(router: respx.Router, clock: FakeClock) -> None:
    pages = {
        None: {"items": [{"id": "m1", "name": "a", "state": "off"}], "hasMore": True, "nextPage": "c2"},
        "c2": {"items": [{"id": "m2", "name": "b", "state": "ready"}], "hasMore": True, "nextPage": "c3"},
        "c3": {
            "items": [{"id": "m3", "name": "c", "state": "off", "ram": "8589938688"}],
            "hasMore": False,
            "nextPage": None,
        },
    }
    route = router.get(f"{PAPERSPACE}/machines").mock(
        side_effect=lambda r: httpx.Response(200, json=pages[r.url.params.get("after")])
    )
    async with open_providers({"paperspace"}, clock=clock, env=FAKE_ENV) as p:
        machines = await p["paperspace"].client.list_machines()  # type: ignore[attr-defined]
    assert [m.id for m in machines] == ["m1", "m2", "m3"] and machines[2].ram == 8589938688
    assert [c.request.url.params.get("after") for c in route.calls] == [None, "c2", "c3"]
    assert all(c.request.url.params["limit"] == "120" for c in route.calls)


async def test_paperspace_cursor_loop_is_an_incomplete_listing(
    router: respx.Router, clock: FakeClock
) -> None:
    router.get(f"{PAPERSPACE}/snapshots").mock(
        return_value=httpx.Response(200, json={"items": [], "hasMore": True, "nextPage": "same"})
    )
    async with open_providers({"paperspace"}, clock=clock, env=FAKE_ENV) as p:
        with pytest.raises(ProviderError, match="did not finish"):
            await p["paperspace"].client.list_snapshots()  # type: ignore[attr-defined]


async def test_paperspace_capacity_typed(router: respx.Router, clock: FakeClock) -> None:
    fake = PaperspaceFake(router)
    req = LaunchRequest(name="gpujob-x", gpu_id="H100", template="t0nspur5", region="ny2")
    async with open_providers({"paperspace"}, clock=clock, env=FAKE_ENV) as p:
        fake.available = False
        with pytest.raises(ProviderCapacityError, match="not available in ny2"):
            await p["paperspace"].create_machine(req)
        fake.available = True
        router.post(f"{PAPERSPACE}/machines").mock(
            return_value=httpx.Response(
                400, json={"code": "BAD_REQUEST", "message": "Region is out of capacity"}
            )
        )
        with pytest.raises(ProviderCapacityError, match="out of capacity"):
            await p["paperspace"].create_machine(req)


async def test_paperspace_currently_starting_is_benign(router: respx.Router, clock: FakeClock) -> None:
    fake = PaperspaceFake(router)
    req = LaunchRequest(name="gpujob-x", gpu_id="A4000", template="t0nspur5", region="ny2")
    async with open_providers({"paperspace"}, clock=clock, env=FAKE_ENV) as p:
        m = await p["paperspace"].create_machine(req)
        stopped = await p["paperspace"].stop(m)
        fake.start_says_starting = True
        started = await p["paperspace"].start(stopped)
    assert started.status == "running" and started.ssh is not None and started.ssh.user == "root"


async def test_paperspace_snapshot_delete_and_normalisation(router: respx.Router, clock: FakeClock) -> None:
    fake = PaperspaceFake(router)
    fake.machines["m1"] = {
        "id": "m1",
        "name": "gpujob-bert",
        "state": "off",
        "region": "Europe (AMS1)",
        "machineType": "A4000x2",
        "publicIpType": "static",
        "publicIp": "1.2.3.4",
        "storageTotal": "107374182400",
        "dtCreated": "2026-06-01T12:00:00Z",
    }
    fake.snapshots["s1"] = {"id": "s1", "name": "nightly", "machineId": "m1", "isAutoSnapshot": True}
    async with open_providers({"paperspace"}, clock=clock, env=FAKE_ENV) as p:
        live = {r.kind: r for r in await p["paperspace"].list_resources()}
        m, snap = live["machine"], live["snapshot"]
        assert (m.region, m.gpu_count, m.volume_gb, m.status, m.public_ip_kind) == (
            "ams1",
            2,
            100,
            "stopped",
            "static",
        )
        assert snap.machine_id == "m1" and snap.attributes["machine_name"] == "gpujob-bert"
        await p["paperspace"].delete_snapshot(snap)
        await p["paperspace"].delete_snapshot(snap)  # gone already: fine
    assert fake.snapshots == {}


# ---- the canary key never leaks


def _answer(name: str, key: str) -> object:
    echo = f"invalid key {key}"  # a platform that echoes the key back in its error text
    return {
        "401": httpx.Response(
            401, json={"title": "Unauthorized", "status": 401, "detail": echo, "message": echo}
        ),
        "403": httpx.Response(403, json={"detail": echo, "message": echo}),
        "404": httpx.Response(404, json={"detail": echo, "message": echo}),
        "429": httpx.Response(429, headers={"Retry-After": "1"}, json={"detail": echo, "message": echo}),
        "500": httpx.Response(500, json={"detail": echo, "message": echo}),
        "timeout": httpx.ReadTimeout(f"timed out talking with key {key}"),
        "malformed": httpx.Response(200, text=f"<html>{echo}"),
        "malformed-4xx": httpx.Response(400, text=f"<html>{echo}"),
    }[name]


@pytest.mark.parametrize("name", ["401", "403", "404", "429", "500", "timeout", "malformed", "malformed-4xx"])
@pytest.mark.parametrize("platform", ["runpod", "paperspace"])
async def test_canary_key_never_leaks(
    router: respx.Router, clock: FakeClock, caplog: pytest.LogCaptureFixture, platform: str, name: str
) -> None:
    caplog.set_level(logging.DEBUG)
    key = RP_CANARY if platform == "runpod" else PS_CANARY
    answer = _answer(name, key)
    url = PODS if platform == "runpod" else f"{PAPERSPACE}/machines"
    route = router.get(url)
    if isinstance(answer, Exception):
        route.mock(side_effect=answer)
    else:
        route.mock(return_value=answer)
    async with open_providers({platform}, clock=clock, env=FAKE_ENV) as p:
        client = p[platform].client  # type: ignore[attr-defined]
        with pytest.raises(ProviderError) as info:
            await (client.list_pods() if platform == "runpod" else client.list_machines())
    assert route.calls[0].request.headers["Authorization"] == f"Bearer {key}"  # the key was really used ...
    shown = " ".join(
        [str(info.value), repr(info.value), info.value.hint or "", info.value.render(), caplog.text]
        + [str(c.request.url) for c in route.calls]
    )
    assert key not in shown  # ... and never shown
    assert "***" in shown or name in ("timeout", "malformed")  # the echoed key was scrubbed, not dropped
