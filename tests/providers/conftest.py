"""Provider test fixtures: a fake clock that records sleeps, canary API keys, and the `backend` fixture
the contract tests run against (respx fakes now; the local simulator when gpujob.sim.testing exists)."""

from __future__ import annotations

import asyncio
import importlib.util
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import respx
from provider_fakes import PAPERSPACE, RUNPOD, PaperspaceFake, RunPodFake

RP_CANARY = "rpa_CANARY_7f3a9c1e_never_print_me"
PS_CANARY = "ps_CANARY_51d0b2aa_never_print_me"

FAKE_ENV = {
    "GPUJOB_RUNPOD_API_URL": f"{RUNPOD}/v2",
    "GPUJOB_RUNPOD_GRAPHQL_URL": f"{RUNPOD}/graphql",
    "GPUJOB_PAPERSPACE_API_URL": PAPERSPACE,
    "GPUJOB_PAPERSPACE_SSH_PORT": "2222",
    "GPUJOB_PAPERSPACE_SSH_USER": "root",
    "RUNPOD_API_KEY": RP_CANARY,
    "PAPERSPACE_API_KEY": PS_CANARY,
}


class FakeClock:
    """Time moves only when someone sleeps; every sleep is recorded."""

    def __init__(self, on_sleep: Any = None) -> None:
        self.t = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)
        self.sleeps: list[float] = []
        self.on_sleep = on_sleep

    def now(self) -> datetime:
        return self.t

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.t += timedelta(seconds=seconds)
        if self.on_sleep is not None:
            await self.on_sleep(seconds)


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def router() -> Iterator[respx.Router]:
    with respx.mock(assert_all_called=False, assert_all_mocked=True) as r:
        yield r


@dataclass
class Backend:
    name: str
    env: dict[str, str]
    clock: FakeClock
    runpod: RunPodFake | None = None
    paperspace: PaperspaceFake | None = None
    extra: dict[str, Any] = field(default_factory=dict)


def _sim_available() -> bool:
    try:
        return importlib.util.find_spec("gpujob.sim.testing") is not None
    except ModuleNotFoundError:
        return False


BACKENDS = ["respx"] + (["sim"] if _sim_available() else [])


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    if request.param == "respx":
        with respx.mock(assert_all_called=False, assert_all_mocked=True) as r:
            yield Backend("respx", dict(FAKE_ENV), FakeClock(), RunPodFake(r), PaperspaceFake(r))
        return
    # The simulator exists: its cases must pass, not skip. Any failure to start it is a test failure.
    from gpujob.sim.testing import running_simulator

    with running_simulator(tmp_path / "sim") as sim:

        async def advance(seconds: float) -> None:
            sim.advance(seconds)
            await asyncio.sleep(0.01)

        yield Backend("sim", dict(sim.env), FakeClock(on_sleep=advance), extra={"sim": sim})


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"
