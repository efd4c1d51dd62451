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
    the spec), never GET /v2/network-volumes/{podId}."""
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
    from gpujob.providers.http import MalformedResponse

    router.get(f"{V2}/pods").mock(return_value=httpx.Response(200, json={"pods": [{"id": None}]}))
    async with open_providers({"runpod"}, clock=clock, env=FAKE_ENV) as p:
        with pytest.raises(MalformedResponse, match="id"):
            await p["runpod"].client.list_pods()  # type: ignore[attr-defined]
