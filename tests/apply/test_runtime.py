from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from gpujob.apply.runtime import (
    ENDPOINT_WAIT_S,
    LARGE_TRANSFER,
    POLL_S,
    MachineNotRunning,
    Target,
    collect_secrets,
    transfer_progress,
    wait_for_endpoint,
)
from gpujob.errors import GpujobError
from gpujob.live import LiveResource, SSHEndpoint
from tests.apply.fakes import FakeClock, FakeProvider, make_spec


def test_large_transfers_are_reported_in_quarters_small_ones_not_at_all():
    notes: list[str] = []
    report = transfer_progress("sync", notes.append)
    for done in range(0, 1001, 50):
        report(done, 1000)
    assert notes == []
    total = LARGE_TRANSFER * 2
    for i in range(101):
        report(total * i // 100, total)
    assert [n.rsplit("(", 1)[1] for n in notes] == ["25%)", "50%)", "75%)", "100%)"]


def test_secrets_come_from_the_environment_and_missing_ones_are_named_not_valued():
    spec = make_spec(run={"command": "x", "secrets": ["HF_TOKEN", "WANDB_API_KEY"]})
    with pytest.raises(GpujobError) as err:
        collect_secrets(spec, {"HF_TOKEN": "hf_value_123"})
    assert "WANDB_API_KEY" in str(err.value) and "hf_value_123" not in err.value.render()
    assert collect_secrets(spec, {"HF_TOKEN": "a", "WANDB_API_KEY": "b", "OTHER": "c"}) == {
        "HF_TOKEN": "a",
        "WANDB_API_KEY": "b",
    }


class _Preempting(FakeProvider):
    """Reports the pod pending for `pending_reads` re-reads, then what `then` says."""

    def __init__(self, pod: LiveResource, pending_reads: int, then: LiveResource) -> None:
        super().__init__()
        self.pod, self.left, self.then = pod, pending_reads, then
        self.reads = 0

    async def get(self, kind: str, resource_id: str) -> LiveResource | None:
        self.reads += 1
        if self.left > 0:
            self.left -= 1
            return self.pod.model_copy(update={"status": "pending", "raw_status": "CREATED", "ssh": None})
        return self.then


def _pod(**over: object) -> LiveResource:
    base = {"platform": "runpod", "kind": "pod", "id": "pod1", "name": "gpujob-toy--p1", "status": "running"}
    return LiveResource.model_validate({**base, **over})


def _target(provider: FakeProvider, resource: LiveResource, **spec: object) -> Target:
    return Target(
        spec=make_spec(**spec),
        spec_path=Path("job.yaml"),
        provider=provider,
        resource=resource,
        state_dir=Path("."),
    )


def test_the_endpoint_wait_stops_at_the_first_read_that_shows_the_machine_stopped() -> None:
    exited = _pod(status="stopped", raw_status="EXITED")
    provider = _Preempting(_pod(), pending_reads=2, then=exited)
    clock, notes = FakeClock(), []
    with pytest.raises(MachineNotRunning) as err:
        asyncio.run(wait_for_endpoint(_target(provider, _pod()), clock, notes.append))
    assert provider.reads == 3  # two pending reads waited on, the stopped one ended the wait
    assert sum(clock.slept) < 10 < ENDPOINT_WAIT_S
    line = err.value.render()
    assert "\n" not in line and "is EXITED, not running" in line and "`gpujob apply` starts it" in line


def test_a_stopped_job_is_told_to_set_state_running_first() -> None:
    exited = _pod(status="stopped", raw_status="off")
    with pytest.raises(MachineNotRunning) as err:
        asyncio.run(
            wait_for_endpoint(
                _target(_Preempting(exited, 0, exited), exited, state="stopped"), FakeClock(), lambda _m: None
            )
        )
    assert "is off, not running" in str(err.value) and "set state: running" in str(err.value)


def test_a_pending_machine_is_still_waited_for_until_it_has_an_endpoint() -> None:
    up = _pod(ssh=SSHEndpoint(host="127.0.0.1", port=40022))
    provider = _Preempting(_pod(), pending_reads=5, then=up)
    clock = FakeClock()
    endpoint = asyncio.run(wait_for_endpoint(_target(provider, _pod()), clock, lambda _m: None))
    assert endpoint.port == 40022 and clock.slept == [POLL_S] * 5
