"""machine.when_unavailable: wait in create_with_fallback, on fakes and a fake clock (no real waiting):
the first full round queues the first candidate at the platform; what RunPod places is returned; past
wait_up_to every candidate is tried once more and then the create fails; spot: true never queues."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from gpujob.apply.capacity import create_with_fallback
from gpujob.errors import ProviderCapacityError
from gpujob.gpus import Candidate
from gpujob.live import LiveResource
from gpujob.providers.base import LaunchRequest
from tests.providers.conftest import FakeClock

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def cands(*ids: str) -> list[Candidate]:
    now = datetime(2026, 12, 1, tzinfo=UTC)
    return [
        Candidate(alias=g, platform_id=g, gpu_count=1, region="EU-RO-1", cloud="secure", spot=False,
                  price_hour=0.69, price_source="test", price_as_of=now)
        for g in ids
    ]  # fmt: skip


class Full:
    """Every create finds no capacity; the queue answers `placed` (or expires: ProviderCapacityError)."""

    platform = "runpod"

    def __init__(self, placed: LiveResource | None) -> None:
        self.placed = placed
        self.creates: list[str] = []
        self.queued: list[tuple[str, float]] = []

    async def create_machine(self, req: LaunchRequest) -> LiveResource:
        self.creates.append(req.gpu_id)
        raise ProviderCapacityError("no capacity", platform="runpod", call="create")

    async def create_queued(self, req: LaunchRequest, wait_s: float, note: Any) -> LiveResource:
        self.queued.append((req.gpu_id, wait_s))
        for waited in (0.0, 60.0, 800.0, 7100.0):  # tenths 0, 0, 1, 9 of the wait
            note(waited, wait_s)
        if self.placed is None:
            raise ProviderCapacityError("waited in RunPod's queue: expired", platform="runpod")
        return self.placed


POD = LiveResource(platform="runpod", kind="pod", id="p2", name="gpujob-j--p", status="running")
BASE = LaunchRequest(name="gpujob-j--p", gpu_id="A")


async def test_a_full_round_queues_the_first_candidate_and_returns_what_is_placed() -> None:
    p, notes = Full(POD), []
    got = await create_with_fallback(
        p, BASE, cands("A", "B"), clock=FakeClock(), note=notes.append, max_wait_s=1800, wait_s=7200
    )  # type: ignore[arg-type]
    assert got is POD and p.creates == ["A", "B"] and p.queued == [("A", 7200)]
    assert any("waiting in RunPod's queue" in n and "up to 2h" in n for n in notes), notes
    progress = [n for n in notes if n.startswith("still waiting")]
    assert len(progress) == 3 and all("billing $0.00/h" in n for n in progress), notes  # not every read


async def test_past_wait_up_to_every_candidate_is_tried_once_more_then_it_fails() -> None:
    p, notes = Full(None), []
    with pytest.raises(ProviderCapacityError, match="after waiting 2h in RunPod's queue"):
        await create_with_fallback(
            p, BASE, cands("A", "B"), clock=FakeClock(), note=notes.append, max_wait_s=1800, wait_s=7200
        )  # type: ignore[arg-type]
    assert p.creates == ["A", "B", "A", "B"] and len(p.queued) == 1


async def test_spot_true_is_not_queued_and_gpujob_retries_for_wait_up_to() -> None:
    p, clock = Full(POD), FakeClock()
    with pytest.raises(ProviderCapacityError, match="after waiting"):
        await create_with_fallback(
            p, BASE.model_copy(update={"spot": True}), cands("A"), clock=clock, note=lambda _: None,
            max_wait_s=1800, wait_s=120,
        )  # type: ignore[arg-type]  # fmt: skip
    assert p.queued == [] and sum(clock.sleeps) <= 120  # the job's wait, not the default 30 min
