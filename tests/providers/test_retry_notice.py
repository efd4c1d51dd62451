"""Provider retries as a person at a terminal sees them: one short line per wait on stderr when it is a
terminal, nothing extra when piped or under CI=true (the log keeps every retry either way)."""

from __future__ import annotations

import io

import httpx
import pytest
import respx

from gpujob.errors import ProviderUnavailable
from gpujob.providers import http, notice
from gpujob.providers.registry import open_providers
from tests.providers.conftest import FAKE_ENV, FakeClock
from tests.providers.provider_fakes import RUNPOD

PODS = f"{RUNPOD}/v2/pods"


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_the_line_says_what_failed_how_long_it_waits_and_which_attempt_comes() -> None:
    assert (
        notice.retry_line("runpod", "503", 2.123, 2, 6) == "RunPod API: 503, retrying in 2.1 s (attempt 2/6)"
    )
    assert notice.retry_line("paperspace", "cannot connect", 0.5, 3, 6) == (
        "Paperspace API: cannot connect, retrying in 0.5 s (attempt 3/6)"
    )


def test_a_terminal_gets_the_lines_a_pipe_and_ci_do_not() -> None:
    tty = _Terminal()
    show = notice.terminal_notice(tty, env={})
    assert show is not None
    show("RunPod API: 503, retrying in 2.1 s (attempt 2/6)")
    assert tty.getvalue() == "RunPod API: 503, retrying in 2.1 s (attempt 2/6)\n"
    assert notice.terminal_notice(io.StringIO(), env={}) is None  # piped
    assert notice.terminal_notice(_Terminal(), env={"CI": "true"}) is None


@pytest.mark.anyio
async def test_each_retry_wait_is_announced_once_with_its_delay(
    router: respx.Router, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    lines: list[str] = []
    monkeypatch.setattr(http, "terminal_notice", lambda: lines.append)
    router.get(PODS).mock(
        side_effect=[
            httpx.Response(503),
            httpx.ConnectError("refused"),
            httpx.Response(429, headers={"Retry-After": "3"}, json={"title": "slow down", "status": 429}),
            httpx.Response(200, json={"pods": []}),
        ]
    )
    async with open_providers({"runpod"}, clock=clock, env=FAKE_ENV) as p:
        assert await p["runpod"].client.list_pods() == []  # type: ignore[attr-defined]
    waits = [f"{s:.1f}" for s in clock.sleeps]
    assert lines == [
        f"RunPod API: 503, retrying in {waits[0]} s (attempt 2/6)",
        f"RunPod API: cannot connect, retrying in {waits[1]} s (attempt 3/6)",
        f"RunPod API: 429 rate limited, retrying in {waits[2]} s (attempt 4/6)",
    ]
    assert 3 <= clock.sleeps[2] < 3.5


@pytest.mark.anyio
async def test_piped_output_gets_no_retry_lines(
    router: respx.Router, clock: FakeClock, capsys: pytest.CaptureFixture[str]
) -> None:
    router.get(PODS).mock(side_effect=[httpx.Response(502), httpx.Response(200, json={"pods": []})])
    async with open_providers({"runpod"}, clock=clock, env=FAKE_ENV) as p:
        await p["runpod"].client.list_pods()  # type: ignore[attr-defined]
    assert len(clock.sleeps) == 1 and capsys.readouterr().err == ""


@pytest.mark.anyio
async def test_calls_failing_together_share_one_line_per_wait(
    router: respx.Router, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    import asyncio

    lines: list[str] = []
    monkeypatch.setattr(http, "terminal_notice", lambda: lines.append)

    async def yield_to_the_other_call(_s: float) -> None:
        await asyncio.sleep(0)  # the calls wait at the same time, as parallel reads do

    clock.on_sleep = yield_to_the_other_call
    router.get(PODS).mock(side_effect=httpx.ConnectError("refused"))
    router.get(f"{RUNPOD}/v2/network-volumes").mock(side_effect=httpx.ConnectError("refused"))
    async with open_providers({"runpod"}, clock=clock, env=FAKE_ENV) as p:
        client = p["runpod"].client  # type: ignore[attr-defined]
        got = await asyncio.gather(client.list_pods(), client.list_volumes(), return_exceptions=True)
    assert all(isinstance(g, ProviderUnavailable) for g in got), got
    assert len(clock.sleeps) == 10  # both calls waited five times each (the log records each)
    assert [line.rsplit("(", 1)[1] for line in lines] == [f"attempt {n}/6)" for n in range(2, 7)]
    assert all(line.startswith("RunPod API: cannot connect, retrying in ") for line in lines)
