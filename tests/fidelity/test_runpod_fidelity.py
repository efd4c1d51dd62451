"""RunPod as the real API answers (the v2 spec's own examples, tests/fixtures/runpod/openapi-v2.json),
through the client, the provider and the planner."""

from __future__ import annotations

import json

import httpx
import pytest
import respx

from gpujob.providers.registry import open_providers
from tests.fixtures.bodies import v2_example
from tests.providers.conftest import FAKE_ENV, FakeClock
from tests.providers.provider_fakes import RUNPOD

pytestmark = pytest.mark.anyio
V2 = f"{RUNPOD}/v2"


async def test_pod_volume_grows_with_a_full_persistent_mount_patch(
    router: respx.Router, clock: FakeClock
) -> None:
    """Item 3: PATCH /v2/pods/{id} {"mounts": {"persistent": {size, path}}} (partial mounts are a 422 in
    the spec), never GET /v2/network-volumes/{podId}.

    Contradicts ../shared/api/REFERENCE.md §1 "PATCH: mounts (path only)": the v2 spec's Mounts schema says every
    mount entry carries its full schema (size + path); the code follows the spec
    (test_reference_md_is_research_where_the_spec_disagrees pins the spec's words)."""
    pod = v2_example("GET", "/v2/pods/{id}")
    pid = pod["id"]
    patched = {**pod, "mounts": {"persistent": {"size": 40, "path": "/workspace"}}}
    reads = [pod, pod, patched]  # plan-time read, the grow's own read, the wait after the restart
    router.get(f"{V2}/pods/{pid}").mock(side_effect=[httpx.Response(200, json=b) for b in reads])
    patch = router.patch(f"{V2}/pods/{pid}").mock(return_value=httpx.Response(200, json=patched))
    async with open_providers({"runpod"}, clock=clock, env=FAKE_ENV) as p:
        rp = p["runpod"]
        live = await rp.get("pod", pid)
        assert live is not None and live.volume_gb == 20
        grown = await rp.grow_volume(live, 40)
    assert json.loads(patch.calls.last.request.content) == {
        "mounts": {"persistent": {"size": 40, "path": "/workspace"}}
    }
    assert grown.volume_gb == 40 and grown.status == "running"
    assert not [c for c in router.calls if "network-volumes" in c.request.url.path]


async def test_one_null_field_does_not_break_the_listing(router: respx.Router, clock: FakeClock) -> None:
    """Item 9: the spec example pod, once as sent and once with null ports/env/actions/locked/name, lists
    as two pods; the nulls read as the wire models' defaults."""
    good = v2_example("GET", "/v2/pods")["pods"][0]
    nulls = {**good, "id": "p2", "ports": None, "env": None, "actions": None, "locked": None, "name": None}
    router.get(f"{V2}/pods").mock(return_value=httpx.Response(200, json={"pods": [good, nulls]}))
    for path, key in (
        ("network-volumes", "networkVolumes"),
        ("templates", "templates"),
        ("registries", "registries"),
    ):
        router.get(f"{V2}/{path}").mock(return_value=httpx.Response(200, json={key: []}))
    async with open_providers({"runpod"}, clock=clock, env=FAKE_ENV) as p:
        pods = [r for r in await p["runpod"].list_resources() if r.kind == "pod"]
    assert [(r.id, r.name) for r in pods] == [(good["id"], good["name"]), ("p2", "")]
    assert pods[1].status == "running" and pods[1].ssh is not None


async def test_a_null_id_is_still_malformed(router: respx.Router, clock: FakeClock) -> None:
    """Tolerance stops at what gpujob cannot do without: a pod without an id proves nothing."""
    from gpujob.errors import MalformedResponse

    router.get(f"{V2}/pods").mock(return_value=httpx.Response(200, json={"pods": [{"id": None}]}))
    async with open_providers({"runpod"}, clock=clock, env=FAKE_ENV) as p:
        with pytest.raises(MalformedResponse, match="id"):
            await p["runpod"].client.list_pods()  # type: ignore[attr-defined]


# --- item 8: v2 list pagination ------------------------------------------------------------------


def _paged(key: str, pages: list[list[dict[str, object]]]) -> list[httpx.Response]:
    """Answers as the production spec pages them: pagination {nextCursor, hasNextPage}."""
    out = []
    for i, items in enumerate(pages):
        more = i + 1 < len(pages)
        block = {"nextCursor": f"c{i + 1}" if more else None, "hasNextPage": more}
        out.append(httpx.Response(200, json={key: items, "pagination": block}))
    return out


async def test_every_page_of_a_v2_list_is_read(router: respx.Router, clock: FakeClock) -> None:
    """Contradicts ../shared/api/REFERENCE.md §1 gotcha 12 ("No pagination"): RunPod's production spec
    (runpod/typescript-api-sdk spec/openapi.yaml, Pagination / PaginationCursor; tests/fixtures/README.md)
    pages v2 lists with cursor/limit and pagination.nextCursor; the code follows that source."""
    pod = v2_example("GET", "/v2/pods")["pods"][0]
    pods = [{**pod, "id": f"p{i}", "name": f"gpujob-j{i}"} for i in range(3)]
    route = router.get(f"{V2}/pods").mock(side_effect=_paged("pods", [pods[:2], pods[2:]]))
    async with open_providers({"runpod"}, clock=clock, env=FAKE_ENV) as p:
        listed = await p["runpod"].client.list_pods()  # type: ignore[attr-defined]
    assert [x.id for x in listed] == ["p0", "p1", "p2"]
    assert [c.request.url.params.get("cursor") for c in route.calls] == [None, "c1"]


async def test_a_repeating_cursor_is_an_incomplete_listing_not_absence(
    router: respx.Router, clock: FakeClock
) -> None:
    from gpujob.errors import ProviderError

    vol = v2_example("GET", "/v2/network-volumes")["networkVolumes"][0]
    stuck = {"networkVolumes": [vol], "pagination": {"nextCursor": "same", "hasNextPage": True}}
    router.get(f"{V2}/network-volumes").mock(return_value=httpx.Response(200, json=stuck))
    async with open_providers({"runpod"}, clock=clock, env=FAKE_ENV) as p:
        with pytest.raises(ProviderError, match="did not finish"):
            await p["runpod"].client.list_volumes()  # type: ignore[attr-defined]


# --- item 7: availability per cloud and GPU count ------------------------------------------------


async def test_catalog_is_asked_per_cloud_and_per_count(router: respx.Router, clock: FakeClock) -> None:
    gpus = v2_example("GET", "/v2/catalog/gpus")

    def answer(request: httpx.Request) -> httpx.Response:
        body = json.loads(json.dumps(gpus))
        # 8 of them on community: none left; 1 on secure: plenty (the stock depends on both).
        short = request.url.params["cloud"] == "COMMUNITY" and request.url.params["count"] == "8"
        for g in body["gpus"]:
            g["availability"] = "NONE" if short else "HIGH"
        return httpx.Response(200, json=body)

    route = router.get(f"{V2}/catalog/gpus").mock(side_effect=answer)
    async with open_providers({"runpod"}, clock=clock, env=FAKE_ENV) as p:
        quotes = await p["runpod"].quotes(counts={1, 8})
    asked = sorted((c.request.url.params["cloud"], c.request.url.params["count"]) for c in route.calls)
    assert asked == [("COMMUNITY", "1"), ("COMMUNITY", "8"), ("SECURE", "1"), ("SECURE", "8")]
    assert all(c.request.url.params["include"] == "AVAILABILITY" for c in route.calls)
    live = {
        (q.cloud, q.gpu_count): q.available
        for q in quotes
        if not q.spot and q.gpu_id == gpus["gpus"][0]["id"]
    }
    assert live == {("secure", 1): True, ("secure", 8): True, ("community", 1): True, ("community", 8): False}


def test_the_planner_reads_the_stock_of_the_count_it_wants() -> None:
    from datetime import UTC, datetime

    from gpujob.cost.rates import quote_available
    from gpujob.live import PriceQuote
    from gpujob.profile import load_profile

    now = datetime(2026, 8, 20, tzinfo=UTC)
    rtx = "NVIDIA GeForce RTX 4090"
    quotes = [
        PriceQuote(platform="runpod", gpu_id=rtx, cloud=c, gpu_count=n, price_hour=0.44, available=a,
                   source="GET /v2/catalog/gpus", as_of=now)
        for c, n, a in (("secure", 1, True), ("secure", 8, False), ("community", 8, True))
    ]  # fmt: skip
    profile = load_profile("runpod")
    assert quote_available(profile, quotes, "RTX4090", False, cloud="secure", count=8) is False
    assert quote_available(profile, quotes, "RTX4090", False, cloud="community", count=8) is True
    assert quote_available(profile, quotes, "RTX4090", False, cloud="secure", count=1) is True


# --- items 4 and 6: spot bids from the live floor; a refused pool or a bid too low moves on -------

KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIEy7 gpujob"
RTX, H100 = "NVIDIA GeForce RTX 4090", "NVIDIA H100 80GB HBM3"


def _launch(**kw: object) -> object:
    from gpujob.providers.base import LaunchRequest

    base: dict[str, object] = {"name": "gpujob-bert", "gpu_id": RTX, "image": "img", "ssh_public_key": KEY}
    return LaunchRequest.model_validate({**base, **kw})


def _candidates(*gpu_ids: str) -> list[object]:
    from datetime import UTC, datetime

    from gpujob.gpus import Candidate

    now = datetime(2026, 8, 20, tzinfo=UTC)
    return [
        Candidate(alias=g, platform_id=g, gpu_count=1, region=None, cloud="secure", price_hour=0.4,
                  price_source="test", price_as_of=now)
        for g in gpu_ids
    ]  # fmt: skip


async def test_spot_bid_is_the_live_minimum_for_the_count_and_cloud(
    router: respx.Router, clock: FakeClock
) -> None:
    from tests.providers.provider_fakes import RunPodFake

    fake = RunPodFake(router)
    fake.min_bid = 0.27
    async with open_providers({"runpod"}, clock=clock, env=FAKE_ENV) as p:
        await p["runpod"].create_machine(_launch(spot=True, gpu_count=2, cloud="community"))  # type: ignore[arg-type]
    price, rent = fake.gql_calls
    assert price["query"].lstrip().startswith("query") and "gpuTypes" in price["query"]
    assert "gpuCount: 2" in price["query"] and "secureCloud: false" in price["query"]
    assert json.dumps(RTX) in price["query"]
    assert rent["variables"]["input"]["bidPerGpu"] == 0.27  # the floor read, not the profile's spot price
    assert (
        rent["variables"]["input"]["gpuCount"] == 2 and rent["variables"]["input"]["cloudType"] == "COMMUNITY"
    )


async def test_resume_bids_the_risen_floor_not_the_stale_bid(router: respx.Router, clock: FakeClock) -> None:
    from tests.providers.provider_fakes import RunPodFake

    fake = RunPodFake(router)
    fake.min_bid = 0.2
    async with open_providers({"runpod"}, clock=clock, env=FAKE_ENV) as p:
        rp = p["runpod"]
        pod = await rp.create_machine(_launch(spot=True))  # type: ignore[arg-type]
        stopped = await rp.stop(pod)
        fake.min_bid = 0.31
        await rp.start(stopped)
    resume = [c for c in fake.gql_calls if "podBidResume" in c["query"]]
    assert [c["variables"]["input"]["bidPerGpu"] for c in resume] == [0.31]


async def test_bid_too_low_is_capacity_like_and_the_next_candidate_is_tried(
    router: respx.Router, clock: FakeClock
) -> None:
    """The GraphQL error arrives as HTTP 200 with errors[] (REFERENCE §1.1); the words are ours."""
    from gpujob.apply.capacity import create_with_fallback
    from tests.providers.provider_fakes import RunPodFake

    fake = RunPodFake(router)
    answer = fake.graphql

    def graphql(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        if "podRentInterruptable" in body["query"] and body["variables"]["input"]["gpuTypeId"] == RTX:
            fake.gql_calls.append(body)
            message = "Your bid price (0.2) is below the minimum bid price (0.24)."
            errors = [
                {"message": message, "path": ["podRentInterruptable"], "extensions": {"code": "RUNPOD"}}
            ]
            return httpx.Response(200, json={"errors": errors, "data": {"podRentInterruptable": None}})
        return answer(request)

    router.post(f"{RUNPOD}/graphql").mock(side_effect=graphql)
    notes: list[str] = []
    async with open_providers({"runpod"}, clock=clock, env=FAKE_ENV) as p:
        pod = await create_with_fallback(
            p["runpod"], _launch(spot=True), _candidates(RTX, H100), clock=clock, note=notes.append,  # type: ignore[arg-type]
            max_wait_s=600,
        )  # fmt: skip
    assert pod.gpu_id == H100 and len(fake.pods) == 1
    assert "no capacity for" in notes[0]
    assert not [s for s in clock.sleeps if s >= 15]  # moved on at once, no capacity backoff


async def test_403_on_create_skips_the_pool_and_all_403_stops_at_once(
    router: respx.Router, clock: FakeClock
) -> None:
    """Item 6: 403 = "your account cannot access the requested pool: skip this candidate" (v2 spec)."""
    from gpujob.apply.capacity import create_with_fallback
    from gpujob.errors import ProviderCapacityError
    from tests.providers.provider_fakes import RunPodFake, problem

    fake = RunPodFake(router)
    forbidden = v2_spec_error(403)

    def create(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        if body["gpu"]["id"] == RTX:
            return httpx.Response(403, json=forbidden, headers={"content-type": "application/problem+json"})
        return fake.create_pod(request)

    router.post(f"{V2}/pods").mock(side_effect=create)
    notes: list[str] = []
    async with open_providers({"runpod"}, clock=clock, env=FAKE_ENV) as p:
        pod = await create_with_fallback(
            p["runpod"],
            _launch(),
            _candidates(RTX, H100),
            clock=clock,
            note=notes.append,
            max_wait_s=600,  # type: ignore[arg-type]
        )
        assert pod.gpu_id == H100 and "not offered to this account (403)" in notes[0]
        router.post(f"{V2}/pods").mock(return_value=problem(403, "access denied", "Forbidden"))
        with pytest.raises(ProviderCapacityError, match="every candidate was refused"):
            await create_with_fallback(
                p["runpod"],
                _launch(),
                _candidates(RTX, H100),
                clock=clock,
                note=notes.append,
                max_wait_s=600,  # type: ignore[arg-type]
            )
    assert not [s for s in clock.sleeps if s >= 15]  # no capacity backoff: waiting cannot change a 403


def v2_spec_error(status: int) -> dict[str, object]:
    """The v2 spec's own example error body for `status` (components.responses)."""
    from tests.fixtures.bodies import v2_spec

    names = {
        401: "UnauthorizedError",
        403: "ForbiddenError",
        404: "NotFoundError",
        422: "UnprocessableEntityError",
    }
    content = v2_spec()["components"]["responses"][names[status]]["content"]
    example = next(iter(next(iter(content.values()))["examples"].values()))
    return dict(example["value"])


# --- item 5: community pods without ssh.direct ---------------------------------------------------


def test_ssh_falls_back_to_the_published_runtime_port() -> None:
    from gpujob.providers.runpod import wire
    from gpujob.providers.runpod.normalize import pod_to_live

    pod = v2_example("GET", "/v2/pods/{id}")
    pod["ssh"]["direct"] = None
    pod["runtime"]["ports"] = [
        {"private": 8888, "public": None, "type": "http", "ip": None},
        {"private": 22, "public": 40112, "type": "tcp", "ip": "69.30.85.41"},
    ]
    live = pod_to_live(wire.Pod.model_validate(pod))
    assert live.ssh is not None and (live.ssh.host, live.ssh.port, live.ssh.user) == (
        "69.30.85.41",
        40112,
        "root",
    )


async def test_running_without_a_public_port_22_fails_fast(router: respx.Router, clock: FakeClock) -> None:
    from gpujob.errors import ProviderError

    pod = v2_example("POST", "/v2/pods", "201")
    running = {**pod, "status": "RUNNING", "ssh": {"proxy": pod["ssh"]["proxy"], "direct": None},
               "runtime": {"uptime": 5, "ports": [{"private": 22, "public": None, "type": "tcp", "ip": None}]}}  # fmt: skip
    router.post(f"{V2}/pods").mock(return_value=httpx.Response(201, json=pod))
    router.get(f"{V2}/pods/{pod['id']}").mock(return_value=httpx.Response(200, json=running))
    async with open_providers({"runpod"}, clock=clock, env=FAKE_ENV) as p:
        with pytest.raises(ProviderError, match="no public port 22") as info:
            await p["runpod"].create_machine(_launch(cloud="community"))  # type: ignore[arg-type]
    assert "billing" in (info.value.hint or "")
    assert 60 <= sum(clock.sleeps) < 120  # the grace, not the 20-minute ready timeout


def test_reference_md_is_research_where_the_spec_disagrees() -> None:
    """REFERENCE.md §1 lists `mounts` as mutable by "path only"; the v2 spec (the contract) requires the full
    persistent mount {size, path} in a PATCH, which is what the client sends (test above). If a new spec
    snapshot drops that rule, this fails and the PATCH body must be looked at again."""
    from tests.fixtures.bodies import v2_spec

    mounts = v2_spec()["components"]["schemas"]["Mounts"]["description"]
    assert "full schema" in mounts and "`size` + `path` for persistent" in mounts
