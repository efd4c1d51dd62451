"""read_live_state reads the RunPod balance in the same round as the listings and prices; a failed
balance read is a note in the live state, never an error."""

from __future__ import annotations

from gpujob.apply.refresh import read_live_state
from gpujob.errors import ProviderUnavailable
from gpujob.live import Account
from tests.apply.test_refresh import NOW, FakeProvider, Gate, run, spec


class WithAccount(FakeProvider):
    def __init__(self, platform: str, gate: Gate, *, account_fails: Exception | None = None) -> None:
        super().__init__(platform, gate)
        self.account_fails = account_fails

    async def account(self) -> Account | None:
        await self.gate.enter(f"{self.platform}.account")
        if self.account_fails:
            raise self.account_fails
        return Account(
            platform="runpod", balance_usd=12.5, spend_per_hour_usd=0.4, read_at=NOW, source="test"
        )


def test_balance_is_read_with_the_listings_all_at_once() -> None:
    async def go():  # type: ignore[no-untyped-def]
        gate = Gate(expected=3)  # list + quotes + account: all three must be waiting together
        state = await read_live_state([spec("j", "runpod")], {"runpod": WithAccount("runpod", gate)}, now=NOW)
        return gate, state

    gate, state = run(go())
    assert sorted(gate.calls) == ["runpod.account", "runpod.list", "runpod.quotes"]
    assert state.accounts["runpod"].balance_usd == 12.5 and state.account_notes == []


def test_failed_balance_read_is_a_note() -> None:
    async def go():  # type: ignore[no-untyped-def]
        gate = Gate(expected=3)
        down = ProviderUnavailable("GraphQL myself: 503 Service Unavailable\nretry later", platform="runpod")
        provider = WithAccount("runpod", gate, account_fails=down)
        return await read_live_state([spec("j", "runpod")], {"runpod": provider}, now=NOW)

    state = run(go())
    assert state.accounts == {} and state.read_errors == []
    assert state.account_notes == ["runpod: balance not read: GraphQL myself: 503 Service Unavailable"]
    assert len(state.resources) == 1  # the listing still counts


def test_a_provider_without_balances_adds_nothing() -> None:
    gate = Gate(expected=2)
    state = run(read_live_state([spec("j", "runpod")], {"runpod": FakeProvider("runpod", gate)}, now=NOW))
    assert state.accounts == {} and state.account_notes == []
