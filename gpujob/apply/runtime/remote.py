"""Reaching a job's machine over SSH: wait for its endpoint, connect with pinned host keys.

Used by the steps (launch, pull, the gate's look) and by `status`, `logs`, `pull` and `ssh`.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpujob.apply.progress import reporter_of
from gpujob.apply.sshapi import SSHApi
from gpujob.clock import Clock
from gpujob.errors import GpujobError, SSHConnectError, SSHKeyRefused
from gpujob.jobfile.model import JobSpec
from gpujob.live import LiveResource, SSHEndpoint
from gpujob.providers.base import Provider
from gpujob.state import StateRef, as_store

ENDPOINT_WAIT_S = 600.0  # the default of GPUJOB_ENDPOINT_WAIT
ENV_ENDPOINT_WAIT = "GPUJOB_ENDPOINT_WAIT"
# A machine in these states gets no endpoint by waiting: only a start (gpujob apply) brings one.
NOT_COMING = ("stopped", "terminating")
POLL_S = 3.0  # the default of GPUJOB_POLL_INTERVAL
ENV_POLL = "GPUJOB_POLL_INTERVAL"
ATTEMPT_S = 10.0  # one connect try (with the SSH layer's own quick retries) before the state is re-read


@dataclass
class Target:
    """One job's machine as the SSH side needs it."""

    spec: JobSpec
    spec_path: Path
    provider: Provider
    resource: LiveResource
    state_dir: StateRef  # the project's store (a Path: a local state directory)
    moved: bool = False  # created or started by this apply: the host (and its key) may be new


class Unreachable(SSHConnectError):
    """No connection was ever made: no SSH endpoint within the wait, or sshd never answered. (A
    connection lost part-way is a plain SSHConnectError: the machine was reached.)"""


class MachineNotRunning(GpujobError):
    """The platform reports the job's machine stopped (EXITED, off, preempted): waiting for its SSH
    endpoint would wait for nothing. One line: the state, and what to run next."""

    def __init__(self, spec: JobSpec, resource: LiveResource) -> None:
        kind = resource.kind
        state = resource.raw_status or resource.status
        if spec.state == "running":
            what = "`gpujob apply` starts it again (its disks are kept), then retry"
        else:
            what = f"the job file says state: {spec.state}; set state: running and run `gpujob apply`"
        super().__init__(f"{spec.name}: {kind} {resource.name} is {state}, not running: {what}")
        self.resource = resource


def endpoint_wait_s() -> float:
    """How long to wait for a machine gpujob started (or created) to have an SSH endpoint and answer:
    GPUJOB_ENDPOINT_WAIT seconds, else ENDPOINT_WAIT_S."""
    raw = os.environ.get(ENV_ENDPOINT_WAIT, "").strip()
    try:
        value = float(raw) if raw else ENDPOINT_WAIT_S
    except ValueError:
        raise GpujobError(
            f"{ENV_ENDPOINT_WAIT}={raw!r} is not a number of seconds", hint=f"e.g. {ENV_ENDPOINT_WAIT}=900"
        ) from None
    return max(1.0, value)


def poll_s() -> float:
    """The pause between two reads of a machine that is not there yet (its SSH endpoint, sshd, a step's
    resource): GPUJOB_POLL_INTERVAL seconds, else POLL_S. The tests make it short; a user need not."""
    raw = os.environ.get(ENV_POLL, "").strip()
    try:
        value = float(raw) if raw else POLL_S
    except ValueError:
        raise GpujobError(
            f"{ENV_POLL}={raw!r} is not a number of seconds", hint=f"e.g. {ENV_POLL}=3"
        ) from None
    return max(0.05, value)


async def wait_for_endpoint(
    target: Target, clock: Clock, note: Callable[[str], None], *, wait_s: float | None = None
) -> SSHEndpoint:
    """Re-read the resource until it runs and has an SSH endpoint; ports and IPs change on every start."""
    wait_s = endpoint_wait_s() if wait_s is None else wait_s
    started = clock.now()
    kind = target.resource.kind
    async with contextlib.AsyncExitStack() as waits:
        announced = False
        while True:
            fresh = await target.provider.get(kind, target.resource.id)
            if fresh is None:
                raise GpujobError(
                    f"{target.spec.name}: {kind} {target.resource.id} disappeared while waiting for SSH"
                )
            target.resource = fresh
            endpoint = target.provider.ssh_endpoint(fresh) if fresh.status == "running" else None
            if endpoint is not None:
                return endpoint
            if fresh.status in NOT_COMING:
                raise MachineNotRunning(target.spec, fresh)
            if (clock.now() - started).total_seconds() > wait_s:
                raise Unreachable(
                    f"{target.spec.name}: no SSH endpoint after {wait_s:.0f}s ({kind} is {fresh.raw_status or fresh.status})",
                    hint=f"check the platform console; re-run apply to resume (this wait: {ENV_ENDPOINT_WAIT})",
                )
            if not announced:
                what = f"waiting for the SSH endpoint of {fresh.name} ({fresh.raw_status or fresh.status})"
                reporter = reporter_of(note)
                if reporter is None:
                    note(what)
                else:
                    await waits.enter_async_context(reporter.waiting(what, wait_s))
                announced = True
            await clock.sleep(poll_s())


def connect_wait_s(target: Target, connect_s: float) -> float:
    """How long to keep trying to reach a machine. One the platform already ran (what status, logs,
    pull, ssh and an apply on a running machine meet) answers within the connect limit or has a
    problem of its own; one this apply just created or started may be booting a large image, so it
    gets the endpoint wait (the machine's state is re-read between attempts, so a stop ends it)."""
    return max(connect_s, endpoint_wait_s()) if target.moved else connect_s


def _unreachable(target: Target, endpoint: SSHEndpoint, waited: float, last: str) -> Unreachable:
    """Connecting gave up: what was tried, for how long, and what to look at."""
    from gpujob.ssh.deadline import ENV_CONNECT

    r = target.resource
    if target.spec.platform == "runpod":
        image = "check that its image starts sshd (RunPod's images do; a custom image must start it from CMD, RP10)"
    else:
        image = "check that sshd runs on it (the platform console shows its boot log)"
    return Unreachable(
        f"{target.spec.name}: no SSH answer from {r.kind} {r.name} at {endpoint.user}@{endpoint.host}:"
        f"{endpoint.port} after trying for {waited:.0f}s, though the platform reports it "
        f"{r.raw_status or r.status} (last error: {last})",
        hint=f"{image}; if it is only slow to boot, raise {ENV_CONNECT} (this wait: {waited:.0f}s) and run the "
        "command again",
    )


@contextlib.asynccontextmanager
async def open_remote(
    target: Target,
    ssh: SSHApi,
    clock: Clock,
    note: Callable[[str], None],
    *,
    connect_s: float | None = None,
) -> AsyncIterator[Any]:
    """Connect with the project key and the pinned host key, retrying while sshd comes up, for at most
    `connect_wait_s` (`connect_s`: the connect limit, GPUJOB_SSH_CONNECT_TIMEOUT when None). Between
    attempts the machine is re-read: one that stopped ends the wait at once (MachineNotRunning)."""
    if connect_s is None:
        from gpujob.ssh.deadline import Limits

        connect_s = Limits.from_env().connect_s
    wait_s = connect_wait_s(target, connect_s)
    key_path, _ = ssh.ensure_project_key(target.state_dir)
    known_hosts = as_store(target.state_dir)
    started = clock.now()
    reporter = reporter_of(note)

    def left() -> float:
        return wait_s - (clock.now() - started).total_seconds()

    async with contextlib.AsyncExitStack() as waits:
        waiting = False
        while True:
            # A machine still without an endpoint gets the endpoint wait, as before; the connect bound
            # counts from the first endpoint.
            endpoint = await wait_for_endpoint(target, clock, note, wait_s=max(left(), endpoint_wait_s()))
            try:
                cm = ssh.open(
                    endpoint,
                    key_path=key_path,
                    known_hosts=known_hosts,
                    resource_id=target.resource.id,
                    expect_new_host=target.moved,
                    # Short tries, so the machine's state is re-read often while it does not answer.
                    timeout=max(1.0, min(left(), ATTEMPT_S)),
                )
                remote = await cm.__aenter__()
            except SSHConnectError as exc:
                # The SSH layer's own line repeats the address: keep only its reason.
                last = re.sub(r"^could not connect to .* within \d+s: ", "", str(exc).splitlines()[0])
                if isinstance(exc, SSHKeyRefused) or ("host key" in last and "changed" in last):
                    raise  # a different machine, or one that trusts another key: waiting does not help
                if left() <= poll_s():
                    raise _unreachable(target, endpoint, wait_s, last) from exc
                what = f"SSH to {endpoint.host}:{endpoint.port} not ready yet ({last})"
                if reporter is None:
                    note(f"{what}; retrying")
                elif not waiting:  # one spinner for the whole wait; the reason of the first try names it
                    await waits.enter_async_context(reporter.waiting(what, wait_s))
                    waiting = True
                await clock.sleep(poll_s())
                continue
            break
    try:
        yield remote
    except BaseException as exc:
        if not await cm.__aexit__(type(exc), exc, exc.__traceback__):
            raise
    else:
        await cm.__aexit__(None, None, None)


async def read_status_once(
    spec: JobSpec,
    resource: LiveResource,
    provider: Provider,
    state_dir: StateRef,
    *,
    ssh: SSHApi | None = None,
    timeout: float = 8.0,
) -> Any:
    """One attempt at the run status for a plan: no waiting for the endpoint, no retries, no new key.
    Returns the SSH layer's RunStatus, or a string saying why there is none."""
    from gpujob.ssh.keys import KEY_NAME

    endpoint = provider.ssh_endpoint(resource)
    if endpoint is None:
        return f"{resource.name} has no SSH endpoint yet"
    store = as_store(state_dir)
    key_path = store.secret_file(KEY_NAME)
    if key_path is None:
        return f"no project SSH key in {store.location} (the machine was not made from here)"
    ssh = ssh or SSHApi.default()
    cm = ssh.open(
        endpoint,
        key_path=key_path,
        known_hosts=store,
        resource_id=resource.id,
        timeout=timeout,
    )
    async with cm as remote:
        return await ssh.run_status(remote, spec)
