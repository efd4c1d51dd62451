"""Contract tests: the same bodies run against every backend (respx fakes; the simulator when present)."""

from __future__ import annotations

import pytest

from gpujob.errors import ProviderConflict
from gpujob.providers.base import LaunchRequest, Provider, VolumeRequest
from tests.providers.conftest import Backend

pytestmark = pytest.mark.anyio

KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAILXGDN/SclOozk1xsDztpmhGiKkkrfQB9SKoO8dSIQQZ gpujob"
RTX = "NVIDIA GeForce RTX 4090"


def _launch(**kw: object) -> LaunchRequest:
    base: dict[str, object] = dict(
        name="gpujob-bert",
        gpu_id=RTX,
        image="runpod/pytorch:2.4",
        volume_gb=20,
        ssh_public_key=KEY,
        env={"WANDB_MODE": "offline"},
        region="US-KS-2",
    )
    base.update(kw)
    return LaunchRequest.model_validate(base)


async def test_runpod_pod_lifecycle(backend: Backend) -> None:
    async with backend.open({"runpod"}) as providers:
        rp = providers["runpod"]
        assert isinstance(rp, Provider)
        pod = await rp.create_machine(_launch())
        assert (pod.kind, pod.name, pod.status, pod.raw_status) == (
            "pod",
            "gpujob-bert",
            "running",
            "RUNNING",
        )
        assert pod.gpu_id == RTX and pod.gpu_count == 1 and pod.cloud == "secure" and not pod.spot
        assert pod.volume_gb == 20 and pod.mount_path == "/workspace"
        assert pod.ssh is not None and pod.ssh.port > 0 and rp.ssh_endpoint(pod) == pod.ssh
        if backend.runpod:
            sent = backend.runpod.created[0]
            assert (
                sent["env"]["PUBLIC_KEY"] == KEY and sent["startSsh"] is True and sent["ports"] == ["22/tcp"]
            )
            assert sent["gpu"] == {"id": RTX, "count": 1} and sent["dataCenterIds"] == ["US-KS-2"]
            assert sent["mounts"] == {"persistent": {"size": 20, "path": "/workspace"}}

        listed = [r for r in await rp.list_resources() if r.kind == "pod" and r.name == "gpujob-bert"]
        assert [r.id for r in listed] == [pod.id]

        stopped = await rp.stop(pod)
        assert stopped.status == "stopped" and stopped.ssh is None
        started = await rp.start(stopped)
        assert started.status == "running" and started.ssh is not None

        await rp.terminate(started)
        assert await rp.get("pod", pod.id) is None
        await rp.terminate(started)  # idempotent: already gone is fine


async def test_runpod_network_volume(backend: Backend) -> None:
    async with backend.open({"runpod"}) as providers:
        rp = providers["runpod"]
        vol = await rp.create_volume(
            VolumeRequest(name="gpujob-bert-data", size_gb=50, region="US-KS-2", tier="high-performance")
        )
        assert (vol.kind, vol.status, vol.volume_gb, vol.region) == (
            "network_volume",
            "available",
            50,
            "US-KS-2",
        )
        assert vol.volume_tier == "high-performance"
        grown = await rp.grow_volume(vol, 80)
        assert grown.volume_gb == 80
        with pytest.raises(ProviderConflict, match="never shrink"):
            await rp.grow_volume(grown, 60)
        pod = await rp.create_machine(_launch(volume_gb=None, network_volume_id=vol.id))
        assert pod.network_volume_id == vol.id and pod.mount_path == "/workspace"
        await rp.terminate(pod)
        await rp.delete_volume(grown)
        assert await rp.get("network_volume", vol.id) is None
        await rp.delete_volume(grown)  # already gone: fine


async def test_runpod_quotes_from_catalog(backend: Backend) -> None:
    async with backend.open({"runpod"}) as providers:
        quotes = await providers["runpod"].quotes()
    live = [q for q in quotes if not q.spot]
    assert live and all(q.platform == "runpod" and q.price_hour > 0 for q in live)
    assert all("/v2/catalog/gpus" in q.source for q in live)
    rtx = {q.cloud: q for q in live if q.gpu_id == RTX}
    assert set(rtx) == {"secure", "community"}
    if backend.runpod:
        assert rtx["secure"].price_hour == 0.44 and rtx["community"].price_hour == 0.31
        h100 = [q for q in live if q.gpu_id == "NVIDIA H100 80GB HBM3"]
        assert [q.available for q in h100] == [False]  # availability NONE


async def test_runpod_spot_create_and_resume(backend: Backend) -> None:
    async with backend.open({"runpod"}) as providers:
        rp = providers["runpod"]
        pod = await rp.create_machine(_launch(spot=True, bid_per_gpu=0.4))
        assert pod.spot and pod.status == "running" and pod.ssh is not None
        stopped = await rp.stop(pod)
        resumed = await rp.start(stopped)
        assert resumed.status == "running" and resumed.spot
        if backend.runpod:
            rent, resume = [c for c in backend.runpod.gql_calls if c["query"].lstrip().startswith("mutation")]
            assert "podRentInterruptable" in rent["query"] and rent["variables"]["input"]["bidPerGpu"] == 0.4
            env = {e["key"]: e["value"] for e in rent["variables"]["input"]["env"]}
            assert env["PUBLIC_KEY"] == KEY
            assert "podBidResume" in resume["query"]
            assert resume["variables"]["input"] == {
                "podId": pod.id,
                "bidPerGpu": 0.4,
                "gpuCount": 1,
            }  # the bid stored at create (the floor, 0.2, is lower)
        await rp.terminate(resumed)


async def test_paperspace_machine_lifecycle(backend: Backend) -> None:
    async with backend.open({"paperspace"}) as providers:
        ps = providers["paperspace"]
        request = LaunchRequest(
            name="gpujob-bert",
            gpu_id="A4000",
            template="tkni3aa4",
            region="ny2",
            volume_gb=100,
            ssh_public_key=KEY,
            public_ip="dynamic",
            auto_shutdown_hours=12,
        )
        m = await ps.create_machine(request)
        assert (m.kind, m.name, m.status, m.raw_status) == ("machine", "gpujob-bert", "running", "ready")
        assert m.region == "ny2" and m.gpu_id == "A4000" and m.public_ip_kind == "dynamic"
        assert m.public_ip and m.ssh is not None and m.ssh.host == m.public_ip
        assert m.ssh.port == int(backend.env.get("GPUJOB_PAPERSPACE_SSH_PORT", "22"))
        if backend.paperspace:
            (script,) = backend.paperspace.scripts.values()
            assert script["name"] == "gpujob-bert-ssh" and script["isRunOnce"] is True
            assert KEY in script["script"]
            (machine,) = backend.paperspace.machines.values()
            body = machine["_body"]
            assert body["startupScriptId"] == script["id"] and body["startOnCreate"] is True
            assert body["autoShutdownEnabled"] is True and body["autoShutdownTimeout"] == 12
            assert m.volume_gb == 100  # storageTotal arrived as a string of bytes

        stopped = await ps.stop(m)
        assert stopped.status == "stopped" and stopped.ssh is None
        started = await ps.start(stopped)
        assert started.status == "running" and started.ssh is not None

        ip = await ps.claim_ip("ny2", started.id)  # type: ignore[attr-defined]
        owned = [r for r in await ps.list_resources() if r.kind == "public_ip"]
        assert [(r.id, r.name, r.machine_id) for r in owned] == [(ip.id, "gpujob-bert", started.id)]

        await ps.terminate(started)
        assert await ps.get("machine", m.id) is None
        await ps.release_ip(ip)
        assert not [r for r in await ps.list_resources() if r.kind == "public_ip"]
        await ps.release_ip(ip)  # already released: fine
