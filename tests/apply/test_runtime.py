from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from gpujob.apply.runtime import (
    ATTEMPT_S,
    ENDPOINT_WAIT_S,
    LARGE_TRANSFER,
    POLL_S,
    MachineNotRunning,
    Target,
    collect_secrets,
    connect_wait_s,
    open_remote,
    poll_s,
    transfer_progress,
    wait_for_endpoint,
)
from gpujob.apply.sshapi import SSHApi
from gpujob.errors import GpujobError, SSHConnectError
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


def test_the_pause_between_reads_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GPUJOB_POLL_INTERVAL", raising=False)
    assert poll_s() == POLL_S == 3.0
    monkeypatch.setenv("GPUJOB_POLL_INTERVAL", "0.2")
    assert poll_s() == 0.2
    up = _pod(ssh=SSHEndpoint(host="127.0.0.1", port=40022))
    clock = FakeClock()
    asyncio.run(
        wait_for_endpoint(_target(_Preempting(_pod(), pending_reads=3, then=up), _pod()), clock, print)
    )
    assert clock.slept == [0.2] * 3
    monkeypatch.setenv("GPUJOB_POLL_INTERVAL", "0")
    assert poll_s() == 0.05  # never a busy loop against the platform's API
    monkeypatch.setenv("GPUJOB_POLL_INTERVAL", "soon")
    with pytest.raises(GpujobError, match="GPUJOB_POLL_INTERVAL='soon' is not a number of seconds"):
        poll_s()


class _NoSSHD:
    """An SSH layer whose connects are all refused (a machine without a working sshd)."""

    def __init__(self) -> None:
        self.timeouts: list[float] = []

    def api(self) -> SSHApi:
        def refuse(endpoint: SSHEndpoint, **kwargs: object) -> object:
            self.timeouts.append(float(kwargs["timeout"]))  # type: ignore[arg-type]
            raise SSHConnectError(
                f"could not connect to {endpoint.host}:{endpoint.port}: ConnectionRefusedError"
            )

        return SSHApi(
            ensure_project_key=lambda _d: (Path("id_ed25519"), "ssh-ed25519 AAAA gpujob"),
            connect=refuse,
            sync_tree=None,  # type: ignore[arg-type]
            pull_checkpoints=None,  # type: ignore[arg-type]
            launch_run=None,  # type: ignore[arg-type]
            run_status=None,  # type: ignore[arg-type]
        )


async def _open(target: Target, ssh: SSHApi, clock: FakeClock, **kw: object) -> None:
    async with open_remote(target, ssh, clock, lambda _m: None, **kw):  # type: ignore[arg-type]
        raise AssertionError("connected to a machine with no sshd")


class _Reads(FakeProvider):
    """Answers each re-read with the next of `reads` (the last one from then on)."""

    def __init__(self, reads: list[LiveResource]) -> None:
        super().__init__()
        self.queue, self.reads = list(reads), 0

    async def get(self, kind: str, resource_id: str) -> LiveResource | None:
        self.reads += 1
        return self.queue.pop(0) if len(self.queue) > 1 else self.queue[0]


UP = {"ssh": SSHEndpoint(host="127.0.0.1", port=40022), "raw_status": "RUNNING"}


def test_a_read_gives_up_on_a_running_machine_without_sshd_after_the_connect_limit() -> None:
    provider, clock, ssh = _Reads([_pod(**UP)]), FakeClock(), _NoSSHD()
    with pytest.raises(SSHConnectError) as err:
        asyncio.run(_open(_target(provider, _pod(**UP)), ssh.api(), clock, connect_s=20.0))
    waited = (clock.now() - FakeClock().now()).total_seconds()
    assert 17 <= waited <= 20 < ENDPOINT_WAIT_S, waited
    assert max(ssh.timeouts) <= ATTEMPT_S and provider.reads == len(ssh.timeouts) > 1  # re-read each try
    text = err.value.render()
    assert "no SSH answer from pod gpujob-toy--p1 at root@127.0.0.1:40022 after trying for 20s" in text
    assert "though the platform reports it RUNNING" in text and "ConnectionRefusedError" in text
    assert "starts sshd" in text and "RP10" in text and "GPUJOB_SSH_CONNECT_TIMEOUT" in text


def test_the_connect_limit_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GPUJOB_SSH_CONNECT_TIMEOUT", "9s")
    clock = FakeClock()
    with pytest.raises(SSHConnectError, match="after trying for 9s"):
        asyncio.run(_open(_target(_Reads([_pod(**UP)]), _pod(**UP)), _NoSSHD().api(), clock))
    assert (clock.now() - FakeClock().now()).total_seconds() <= 9


def test_after_a_create_apply_waits_longer_but_stops_as_soon_as_the_machine_exits() -> None:
    exited = _pod(status="stopped", raw_status="EXITED")
    # Running (and refusing SSH) for 40 re-reads, i.e. well past the read-only limit, then EXITED.
    provider = _Reads([_pod(**UP)] * 40 + [exited])
    target = _target(provider, _pod(**UP))
    target.moved = True
    assert connect_wait_s(target, 30.0) == ENDPOINT_WAIT_S
    clock = FakeClock()
    with pytest.raises(MachineNotRunning, match="is EXITED, not running"):
        asyncio.run(_open(target, _NoSSHD().api(), clock, connect_s=30.0))
    assert provider.reads == 41  # it kept trying past 30 s, and the first EXITED read ended the wait
    assert 30 < (clock.now() - FakeClock().now()).total_seconds() < ENDPOINT_WAIT_S
