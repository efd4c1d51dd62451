"""The simulator's Paperspace answers against the transcribed spec bodies (tests/fixtures/paperspace):
the same keys as the real objects (so no templateId the real API never sends), OS templates listed
and required, disk resizes and auto-shutdown timers only in the forms the API takes."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from gpujob.providers.paperspace import wire
from gpujob.sim.testing import running_simulator
from tests.fixtures.bodies import ps

BODY = {"name": "gpujob-c", "machineType": "A4000", "diskSize": 50, "region": "ny2", "publicIpType": "none"}


@pytest.fixture
def api(tmp_path: Path) -> Iterator[httpx.Client]:
    """The simulator without pod processes: API shapes only, no namespaces needed."""
    with running_simulator(tmp_path / "sim", pods=False, provision_seconds=0.0, boot_seconds=0.0) as sim:
        headers = {"Authorization": f"Bearer {sim.env['PAPERSPACE_API_KEY']}"}
        with httpx.Client(base_url=sim.env["GPUJOB_PAPERSPACE_API_URL"], headers=headers, timeout=20) as c:
            yield c


def _create(api: httpx.Client, **extra: Any) -> httpx.Response:
    return api.post("/machines", json={**BODY, "templateId": "t0nspur5", "startOnCreate": False, **extra})


def _off(api: httpx.Client, mid: str) -> dict[str, Any]:
    for _ in range(500):
        m = api.get(f"/machines/{mid}").json()
        if m["state"] == "off":
            return dict(m)
    raise AssertionError("machine never reached off")


def test_machine_has_exactly_the_real_keys(api: httpx.Client) -> None:
    created = _create(api)
    assert created.status_code == 200, created.text
    assert set(created.json()["data"]) == set(ps("machine"))
    m = api.get(f"/machines/{created.json()['data']['id']}").json()
    assert set(m) == set(ps("machine")), set(m) ^ set(ps("machine"))
    assert "templateId" not in m and "startupScriptId" not in m
    wire.Machine.model_validate(m)
    listed = api.get("/machines").json()["items"]
    assert [set(x) for x in listed] == [set(ps("machine"))]


def test_os_templates_listed_like_the_real_ones(api: httpx.Client) -> None:
    page = api.get("/os-templates", params={"limit": 2}).json()
    item_keys = set(ps("os-templates")["items"][0])
    assert page["hasMore"] is True and len(page["items"]) == 2
    assert all(set(i) == item_keys for i in page["items"])
    every = page["items"] + api.get("/os-templates", params={"after": page["nextPage"]}).json()["items"]
    assert {t["id"] for t in every} >= {"t0nspur5", "tkni3aa4"}
    [wire.OsTemplate.model_validate(t) for t in every]
    named = api.get("/os-templates", params={"name": "Ubuntu 22.04"}).json()["items"]
    assert [t["id"] for t in named] == ["t0nspur5"]


def test_unknown_template_id_is_refused_and_nothing_is_created(api: httpx.Client) -> None:
    r = _create(api, templateId="ml-in-a-box")  # a name where the id belongs
    assert r.status_code == 404 and r.json()["code"] == "NOT_FOUND" and "Template" in r.json()["message"]
    assert api.get("/machines").json()["items"] == []


def test_disk_resize_only_off_and_only_to_listed_sizes(api: httpx.Client) -> None:
    mid = _create(api).json()["data"]["id"]
    _off(api, mid)
    bad = api.put(f"/machines/{mid}", json={"diskSize": 300})
    assert bad.status_code == 400 and "diskSize" in bad.json()["message"]
    ok = api.put(f"/machines/{mid}", json={"diskSize": 100})
    assert ok.status_code == 200, ok.text
    assert api.get(f"/machines/{mid}").json()["storageTotal"] == str(100 * 2**30)
    api.patch(f"/machines/{mid}/start", json={})
    running = api.put(f"/machines/{mid}", json={"diskSize": 250})
    assert running.status_code == 400 and "must be off" in running.json()["message"]


def test_auto_shutdown_timeout_is_whole_hours(api: httpx.Client) -> None:
    r = _create(api, autoShutdownEnabled=True, autoShutdownTimeout=1.5)
    assert r.status_code == 400 and "whole number of hours" in r.json()["message"]
    assert _create(api, autoShutdownEnabled=True, autoShutdownTimeout=2).status_code == 200
