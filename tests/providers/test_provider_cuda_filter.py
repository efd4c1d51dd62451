"""RP9 against the simulator: gpujob sends the image's CUDA (read from its tag) as the host filter on
create, gpu.minCudaVersion on REST v2 and allowedCudaVersions on GraphQL spot rent, and the simulator
places a pod only on a host that reports an acceptable CUDA (else a capacity error, as the v2 spec says),
and refuses malformed or conflicting filters as RunPod does."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest

from gpujob.errors import ProviderCapacityError
from gpujob.images import cuda_from_tag
from gpujob.providers.base import LaunchRequest
from tests.providers.conftest import sim_backend

pytestmark = pytest.mark.anyio

RTX = "NVIDIA GeForce RTX 4090"
IMAGE_124 = "runpod/pytorch:2.4.0-py3.11-cuda12.4.1-devel-ubuntu22.04"
IMAGE_129 = "runpod/pytorch:2.8.0-py3.11-cuda12.9.0-devel-ubuntu22.04"


def pod(image: str, **kw: Any) -> LaunchRequest:
    return LaunchRequest(
        name="gpujob-cuda", gpu_id=RTX, image=image, volume_gb=20, region="US-KS-2",
        min_cuda=cuda_from_tag(image), **kw,
    )  # fmt: skip


async def test_on_demand_create_sends_the_image_cuda_floor_and_lands_on_a_host_that_runs_it(
    tmp_path: Path,
) -> None:
    with sim_backend(tmp_path / "sim", host_cuda="12.8") as b:
        async with b.open({"runpod"}) as p:
            rp = p["runpod"]
            made = await rp.create_machine(pod(IMAGE_124))
            sim_pod = b.sim.engine.state.pods[made.id]
            assert sim_pod.min_cuda == "12.4" and sim_pod.allowed_cuda == []
            await rp.terminate(made)
            # every host reports 12.8: an image built for 12.9 is placed nowhere (capacity, not a crash)
            with pytest.raises(ProviderCapacityError):
                await rp.create_machine(pod(IMAGE_129))
            assert [x for x in b.sim.engine.state.pods.values() if x.ended_at is None] == []


async def test_spot_rent_sends_every_acceptable_cuda_and_the_simulator_honours_it(tmp_path: Path) -> None:
    with sim_backend(tmp_path / "sim", host_cuda="12.4") as b:
        async with b.open({"runpod"}) as p:
            rp = p["runpod"]
            with pytest.raises(ProviderCapacityError):
                await rp.create_machine(
                    pod("runpod/pytorch:2.5.1-py3.11-cuda12.6.3-devel", spot=True, bid_per_gpu=0.4)
                )
            made = await rp.create_machine(pod(IMAGE_124, spot=True, bid_per_gpu=0.4))
            allowed = b.sim.engine.state.pods[made.id].allowed_cuda
            assert allowed[0] == "13.0" and allowed[-1] == "12.4" and "12.3" not in allowed
            await rp.terminate(made)


def test_the_simulator_refuses_malformed_and_conflicting_cuda_filters(tmp_path: Path) -> None:
    with sim_backend(tmp_path / "sim") as b:
        client = httpx.Client(
            base_url=b.env["GPUJOB_RUNPOD_API_URL"],
            headers={"Authorization": f"Bearer {b.env['RUNPOD_API_KEY']}"},
            timeout=20,
        )
        base = {"name": "x", "image": IMAGE_124, "dataCenterIds": ["US-KS-2"]}
        bare_major = client.post("/pods", json={**base, "gpu": {"id": RTX, "minCudaVersion": "12"}})
        assert bare_major.status_code == 422 and "minCudaVersion" in bare_major.text
        both = {"id": RTX, "minCudaVersion": "12.1", "allowedCudaVersions": ["12.8"]}
        conflict = client.post("/pods", json={**base, "gpu": both})
        assert conflict.status_code == 400 and "mutually exclusive" in conflict.text
        ok = client.post("/pods", json={**base, "gpu": {"id": RTX, "allowedCudaVersions": ["12.8"]}})
        assert ok.status_code == 201 and ok.json()["cudaVersion"] == "12.8"
        client.delete(f"/pods/{ok.json()['id']}")


async def test_a_cuda_filter_no_host_meets_reads_as_such_in_the_fallback_notes_and_hint(
    tmp_path: Path,
) -> None:
    from datetime import UTC, datetime

    from gpujob.apply.capacity import create_with_fallback
    from gpujob.gpus import Candidate

    now = datetime(2026, 12, 1, tzinfo=UTC)
    cands = [
        Candidate(alias=a, platform_id=g, gpu_count=1, region="US-KS-2", cloud="secure", spot=False,
                  price_hour=1.0, price_source="test", price_as_of=now)
        for a, g in (("RTX4090", RTX), ("L40S", "NVIDIA L40S"))
    ]  # fmt: skip
    notes: list[str] = []
    with sim_backend(tmp_path / "sim", host_cuda="12.8") as b:
        async with b.open({"runpod"}) as p:
            with pytest.raises(ProviderCapacityError) as exc:
                await create_with_fallback(
                    p["runpod"], pod(IMAGE_129), cands, clock=b.clock, note=notes.append, max_wait_s=0
                )
    assert notes[0].startswith("no capacity for 1× RTX4090") and "with host CUDA 12.9 or newer" in notes[0]
    assert "next: 1× L40S" in notes[0] and "with host CUDA 12.9 or newer" in notes[1]
    assert "an image built for an older CUDA" in (exc.value.hint or "") and "RP9" in (exc.value.hint or "")
