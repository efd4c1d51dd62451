"""Provider test fixtures: a fake clock that records sleeps, canary API keys, and the `backend` fixture
the contract tests run against (respx fakes now; the local simulator when gpujob.sim.testing exists)."""

from __future__ import annotations

import asyncio
import importlib.util
import os
from collections.abc import Iterator
from contextlib import AbstractAsyncContextManager, contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
import respx

from gpujob.providers.base import Provider
from gpujob.providers.http import RetryPolicy
from gpujob.providers.registry import open_providers
from gpujob.providers.wait import Timeouts
from tests.providers.provider_fakes import PAPERSPACE, RUNPOD, PaperspaceFake, RunPodFake

if TYPE_CHECKING:
    from gpujob.sim.testing import Sim

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


class RealClock:
    """The system clock, recording every sleep: against the simulator real time passes (its pods boot
    in real seconds), so provider waits must run on it and still finish quickly."""

    def __init__(self) -> None:
        self.sleeps: list[float] = []

    def now(self) -> datetime:
        return datetime.now(UTC)

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        await asyncio.sleep(seconds)


# Against the simulator: the default Timeouts (state waits start at 0.25 s) and a short backoff, so a
# 5xx storm costs tenths of a second; Retry-After is honoured exactly as on the real API.
SIM_POLICY = RetryPolicy(base_delay=0.05, max_delay=0.5, deadline=60.0)


@dataclass
class Backend:
    name: str
    env: dict[str, str]
    clock: FakeClock | RealClock
    runpod: RunPodFake | None = None
    paperspace: PaperspaceFake | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    policy: RetryPolicy | None = None
    timeouts: Timeouts | None = None

    def open(self, platforms: set[str]) -> AbstractAsyncContextManager[dict[str, Provider]]:
        return open_providers(
            platforms, clock=self.clock, env=self.env, policy=self.policy, timeouts=self.timeouts
        )

    @property
    def sim(self) -> Sim:
        return self.extra["sim"]  # type: ignore[no-any-return]

    @property
    def graphql_gone(self) -> bool:
        """The simulator answers RunPod GraphQL with 410 Gone (fixture simg's "gone" case)."""
        return self.extra.get("graphql") == "gone"


def _sim_available() -> bool:
    try:
        return importlib.util.find_spec("gpujob.sim.testing") is not None
    except ModuleNotFoundError:
        return False


def need_namespaces() -> None:
    """Simulated pods are real sshd processes in namespaces: required in CI, a visible skip elsewhere."""
    from gpujob.sim.podproc import namespaces_available

    ok, why = namespaces_available()
    if not ok:
        if os.environ.get("CI") == "true":
            pytest.fail(f"simulated pods need namespaces and CI must run them: {why}")
        pytest.skip(why)


@contextmanager
def sim_backend(data_dir: Path, **options: Any) -> Iterator[Backend]:
    from gpujob.sim.testing import running_simulator

    need_namespaces()
    with running_simulator(data_dir, **options) as sim:
        yield Backend("sim", dict(sim.env), RealClock(), extra={"sim": sim}, policy=SIM_POLICY)


BACKENDS = ["respx"] + (["sim"] if _sim_available() else [])


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    if request.param == "respx":
        with respx.mock(assert_all_called=False, assert_all_mocked=True) as r:
            yield Backend("respx", dict(FAKE_ENV), FakeClock(), RunPodFake(r), PaperspaceFake(r))
        return
    # The simulator exists: its cases must pass, not skip. Any failure to start it is a test failure.
    with sim_backend(tmp_path / "sim") as b:
        yield b


@pytest.fixture
def simb(tmp_path: Path) -> Iterator[Backend]:
    """Simulator only (speed 1: real time), for the cases respx cannot express."""
    with sim_backend(tmp_path / "sim") as b:
        yield b


@pytest.fixture(params=["live", "gone"])
def simg(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    """The simulator with RunPod's GraphQL live, and gone as announced for early 2027 (410 to every
    call): the spot scenarios run either way, each asserting what that calendar means."""
    with sim_backend(tmp_path / "sim", runpod_graphql=request.param) as b:
        b.extra["graphql"] = request.param
        yield b


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"
