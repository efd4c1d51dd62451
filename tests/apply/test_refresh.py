"""read_live_state reads every platform at once: listings and quotes are all in flight together."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

import pytest

from gpujob.apply.refresh import read_live_state
from gpujob.errors import ProviderUnavailable
from gpujob.jobfile.model import JobSpec
from gpujob.live import LiveResource, PriceQuote

NOW = datetime(2026, 11, 29, 12, tzinfo=UTC)


def spec(name: str, platform: str) -> JobSpec:
    return JobSpec.model_validate(
        {"version": 1, "name": name, "platform": platform, "machine": {"gpu": ["A6000"]}, "state": "running"}
    )


class Gate:
    """Lets calls through only once `expected` of them are waiting: sequential reads never get there."""

    def __init__(self, expected: int) -> None:
        self.expected, self.waiting, self.event = expected, 0, asyncio.Event()
        self.calls: list[str] = []

    async def enter(self, what: str) -> None:
        self.calls.append(what)
        self.waiting += 1
        if self.waiting >= self.expected:
            self.event.set()
        await asyncio.wait_for(self.event.wait(), timeout=5)


class FakeProvider:
    def __init__(self, platform: str, gate: Gate, *, fail: Exception | None = None) -> None:
        self.platform, self.gate, self.fail = platform, gate, fail

    async def list_resources(self) -> list[LiveResource]:
        await self.gate.enter(f"{self.platform}.list")
        if self.fail:
            raise self.fail
        return [
            LiveResource(
                platform=self.platform,
                kind="pod" if self.platform == "runpod" else "machine",  # type: ignore[arg-type]
                id=f"{self.platform}-1",
                name="gpujob-a",
                status="running",
            )
        ]

    async def quotes(self, counts: object = (1,)) -> list[PriceQuote]:
        await self.gate.enter(f"{self.platform}.quotes")
        return [PriceQuote(platform=self.platform, gpu_id="A6000", price_hour=1.0, source="test", as_of=NOW)]  # type: ignore[arg-type]


def run(coro):  # type: ignore[no-untyped-def]
    return asyncio.run(coro)


def test_all_reads_are_concurrent_and_one_per_platform() -> None:
    async def go():  # type: ignore[no-untyped-def]
        gate = Gate(expected=4)
        providers = {p: FakeProvider(p, gate) for p in ("runpod", "paperspace")}
        specs = [spec(f"j{i}", "runpod") for i in range(25)] + [
            spec(f"k{i}", "paperspace") for i in range(25)
        ]
        state = await read_live_state(specs, providers, now=NOW)
        return gate, state

    gate, state = run(go())
    assert sorted(gate.calls) == ["paperspace.list", "paperspace.quotes", "runpod.list", "runpod.quotes"]
    assert len(state.resources) == 2 and len(state.quotes) == 2 and state.read_errors == []
    assert state.read_at == NOW


def test_only_platforms_in_use_are_read() -> None:
    async def go():  # type: ignore[no-untyped-def]
        gate = Gate(expected=2)
        providers = {p: FakeProvider(p, gate) for p in ("runpod", "paperspace")}
        await read_live_state([spec("a", "runpod")], providers, now=NOW)
        return gate

    assert sorted(run(go()).calls) == ["runpod.list", "runpod.quotes"]


def test_one_platform_down_is_a_read_error_not_a_crash() -> None:
    async def go():  # type: ignore[no-untyped-def]
        gate = Gate(expected=4)
        providers = {
            "runpod": FakeProvider(
                "runpod", gate, fail=ProviderUnavailable("retries spent", platform="runpod")
            ),
            "paperspace": FakeProvider("paperspace", gate),
        }
        return await read_live_state([spec("a", "runpod"), spec("b", "paperspace")], providers, now=NOW)

    state = run(go())
    assert [r.platform for r in state.resources] == ["paperspace"]
    assert len(state.read_errors) == 1 and state.read_errors[0].startswith("runpod: list resources failed")


def test_every_platform_down_raises() -> None:
    async def go():  # type: ignore[no-untyped-def]
        gate = Gate(expected=2)
        providers = {
            "runpod": FakeProvider("runpod", gate, fail=ProviderUnavailable("down", platform="runpod"))
        }
        return await read_live_state([spec("a", "runpod")], providers, now=NOW)

    with pytest.raises(ProviderUnavailable):
        run(go())


def test_programming_errors_are_not_swallowed() -> None:
    async def go():  # type: ignore[no-untyped-def]
        gate = Gate(expected=2)
        providers = {"runpod": FakeProvider("runpod", gate, fail=KeyError("bug"))}
        return await read_live_state([spec("a", "runpod")], providers, now=NOW)

    with pytest.raises(KeyError):
        run(go())
