"""The run over SSH: wait for the endpoint, connect with pinned host keys, sync, launch, pull.

Used by the applier (LAUNCH and PULL steps) and by `status`, `logs`, `pull` and `ssh`.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import os
import re
import shlex
import stat
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from gpujob.apply.gate import checkpoint_tier
from gpujob.apply.progress import reporter_of
from gpujob.apply.records import (
    PulledFile,
    PullRecord,
    current_record,
    load_pull_record,
    save_pull_record,
)
from gpujob.apply.sshapi import SSHApi
from gpujob.clock import Clock
from gpujob.errors import GpujobError, SSHConnectError
from gpujob.live import LiveResource, SSHEndpoint
from gpujob.providers.base import Provider
from gpujob.spec.model import JobSpec
from gpujob.ssh.quote import remote_path
from gpujob.state import StateRef, as_store

ENDPOINT_WAIT_S = 600.0
# A machine in these states gets no endpoint by waiting: only a start (gpujob apply) brings one.
NOT_COMING = ("stopped", "terminating")
LAUNCH_ATTEMPTS = 3
POLL_S = 3.0
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


def collect_secrets(spec: JobSpec, env: Mapping[str, str], *, rerun: str = "gpujob apply") -> dict[str, str]:
    """Values of run.secrets from the local environment. Missing ones are named (never valued).
    `rerun` is the command line that repeats this one, for the hint."""
    names = spec.run.secrets if spec.run else []
    missing = [n for n in names if not env.get(n)]
    if missing:
        exports = " ".join(f"{n}=..." for n in missing)
        raise GpujobError(
            f"{spec.name}: secret(s) not set in the local environment: {', '.join(missing)}",
            hint=f"export {exports} in this shell (gpujob passes the values over SSH and never stores them), "
            f"then run: `{rerun}`",
        )
    from gpujob.config import API_KEY_ENV

    keys = {env.get(k, "").strip(): k for k in API_KEY_ENV.values() if env.get(k, "").strip()}
    for n in names:
        if env[n].strip() in keys:
            raise GpujobError(
                f"{spec.name}: the secret {n} holds the same value as {keys[env[n].strip()]}, gpujob's "
                "account key; it is not sent to the machine",
                hint="give the run a separate key with the least access it needs",
            )
    return {n: env[n] for n in names}


def sync_patterns(spec: JobSpec) -> list[str]:
    """The job's excludes, then its deny patterns: later rules win, so no exclude negation re-includes a
    denied file (the SSH layer adds its own credential deny list after both)."""
    assert spec.run is not None
    return [*spec.run.sync.exclude, *spec.run.sync.deny]


async def wait_for_endpoint(
    target: Target, clock: Clock, note: Callable[[str], None], *, wait_s: float = ENDPOINT_WAIT_S
) -> SSHEndpoint:
    """Re-read the resource until it runs and has an SSH endpoint; ports and IPs change on every start."""
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
                raise SSHConnectError(
                    f"{target.spec.name}: no SSH endpoint after {wait_s:.0f}s ({kind} is {fresh.raw_status or fresh.status})",
                    hint="check the platform console; re-run apply to resume",
                )
            if not announced:
                what = f"waiting for the SSH endpoint of {fresh.name} ({fresh.raw_status or fresh.status})"
                reporter = reporter_of(note)
                if reporter is None:
                    note(what)
                else:
                    await waits.enter_async_context(reporter.waiting(what, wait_s))
                announced = True
            await clock.sleep(POLL_S)


def connect_wait_s(target: Target, connect_s: float) -> float:
    """How long to keep trying to reach a machine. One the platform already ran (what status, logs,
    pull, ssh and an apply on a running machine meet) answers within the connect limit or has a
    problem of its own; one this apply just created or started may be booting a large image, so it
    gets the endpoint wait (the machine's state is re-read between attempts, so a stop ends it)."""
    return max(connect_s, ENDPOINT_WAIT_S) if target.moved else connect_s


def _unreachable(target: Target, endpoint: SSHEndpoint, waited: float, last: str) -> SSHConnectError:
    """Connecting gave up: what was tried, for how long, and what to look at."""
    from gpujob.ssh.deadline import ENV_CONNECT

    r = target.resource
    if target.spec.platform == "runpod":
        image = "check that its image starts sshd (RunPod's images do; a custom image must start it from CMD, RP10)"
    else:
        image = "check that sshd runs on it (the platform console shows its boot log)"
    return SSHConnectError(
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
            endpoint = await wait_for_endpoint(target, clock, note, wait_s=max(left(), ENDPOINT_WAIT_S))
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
                if "host key" in last and "changed" in last:
                    raise  # a different machine answers: waiting longer does not help
                if left() <= POLL_S:
                    raise _unreachable(target, endpoint, wait_s, last) from exc
                what = f"SSH to {endpoint.host}:{endpoint.port} not ready yet ({last})"
                if reporter is None:
                    note(f"{what}; retrying")
                elif not waiting:  # one spinner for the whole wait; the reason of the first try names it
                    await waits.enter_async_context(reporter.waiting(what, wait_s))
                    waiting = True
                await clock.sleep(POLL_S)
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


def _alive(status: Any) -> bool:
    for name in ("alive", "running", "is_alive"):
        value = getattr(status, name, None)
        if isinstance(value, bool):
            return value
    return str(getattr(status, "state", "")).lower() in ("running", "alive")


async def launch(
    target: Target, ssh: SSHApi, clock: Clock, env: Mapping[str, str], note: Callable[[str], None]
) -> str:
    """Sync the code and start the run detached, unless it is already alive. Returns a one-line outcome."""
    spec = target.spec
    if spec.run is None:
        return "no run section: nothing to launch"
    secrets = collect_secrets(spec, env)
    for attempt in range(1, LAUNCH_ATTEMPTS + 1):
        try:
            return await _launch_once(target, ssh, clock, secrets, note)
        except SSHConnectError as exc:
            # A dropped connection mid-sync: reconnect (the endpoint is re-read) and sync again; only
            # the files that did not arrive are sent.
            if attempt == LAUNCH_ATTEMPTS:
                raise
            note(f"connection lost ({str(exc).splitlines()[0]}); reconnecting, attempt {attempt + 1}")
            await clock.sleep(POLL_S)
    raise AssertionError("unreachable")


async def _launch_once(
    target: Target, ssh: SSHApi, clock: Clock, secrets: dict[str, str], note: Callable[[str], None]
) -> str:
    spec = target.spec
    assert spec.run is not None
    async with open_remote(target, ssh, clock, note) as remote:
        status = await ssh.run_status(remote, spec)
        if _alive(status):
            return "run already alive: not relaunched"
        src = (target.spec_path.parent / spec.run.sync.src).resolve()
        with transfer_reporting("sync", note) as progress:
            stats = await ssh.sync_tree(
                remote, src, spec.run.sync.dest, sync_patterns(spec), progress=progress
            )
        for warning in getattr(stats, "warnings", None) or []:
            note(f"warning: {warning}")
        note(f"synced {src} -> {spec.run.sync.dest}{_describe_stats(stats)}")
        await _carry_to_new_dir(remote, spec, ssh, note)
        started = await ssh.launch_run(remote, spec, secrets=secrets)
    if started is False:
        return "run already alive: not relaunched"
    return f"run launched on {target.resource.name}"


async def _carry_to_new_dir(remote: Any, spec: JobSpec, ssh: SSHApi, note: Callable[[str], None]) -> None:
    """checkpoint.dir changed since the last run on this disk: its checkpoints move to the new dir
    before the run starts (only into an empty one), so training continues from its step."""
    if spec.checkpoint is None:
        return
    old = await ssh.recorded_checkpoint_dir(remote, spec)
    if not old or old == remote_path(spec.checkpoint.dir):
        return
    moved = await ssh.move_checkpoints(remote, old, spec.checkpoint.dir)
    if moved is not None:
        note(
            f"checkpoint.dir changed: moved {len(moved.files)} checkpoint file(s) "
            f"({moved.total_bytes} B) from {old} to {spec.checkpoint.dir}, read back before removing"
        )


LARGE_TRANSFER = 8 << 20


@contextlib.contextmanager
def transfer_reporting(what: str, note: Callable[[str], None]) -> Iterator[Callable[[int, int], None]]:
    """A (done, total) callback for the SSH layer: the hooks' transfer bar when `note` is a job's
    reporter, else quarter notes of large transfers (small ones are not reported at all)."""
    reporter = reporter_of(note)
    if reporter is not None:
        with reporter.transfer(what) as progress:
            yield progress
    else:
        yield transfer_progress(what, note)


def transfer_progress(what: str, note: Callable[[str], None]) -> Callable[[int, int], None]:
    """A (done, total) callback that reports large transfers in quarters, and small ones not at all."""
    shown = {"quarter": 0}

    def report(done: int, total: int) -> None:
        if total < LARGE_TRANSFER:
            return
        quarter = min(4, done * 4 // total)
        if quarter > shown["quarter"]:
            shown["quarter"] = quarter
            note(f"{what}: {done / 1e6:.0f} of {total / 1e6:.0f} MB ({quarter * 25}%)")

    return report


def _describe_stats(stats: Any) -> str:
    files = getattr(stats, "files_sent", None)  # SyncStats; a fake SSH layer may return None
    return f" ({files} file(s) sent)" if isinstance(files, int) else ""


def pull_dir(spec: JobSpec, spec_path: Path) -> Path:
    """checkpoint.pull_to as an absolute path (relative ones start at the job file's directory)."""
    assert spec.checkpoint is not None
    local_dir = Path(spec.checkpoint.pull_to)
    if not local_dir.is_absolute():
        local_dir = (spec_path.parent / local_dir).resolve()
    return local_dir


async def pull(
    target: Target, ssh: SSHApi, clock: Clock, note: Callable[[str], None], *, progress: Any = None
) -> PullRecord:
    """List, pull, checksum and verify every checkpoint, then write the pull record."""
    spec = target.spec
    if spec.checkpoint is None:
        raise GpujobError(f"{spec.name}: no checkpoint section: nothing to pull")
    if target.resource.status != "running":
        raise GpujobError(
            f"{spec.name}: cannot pull: {target.resource.name} is {target.resource.status}",
            hint="set state: running and apply (the disks are kept), then pull",
        )
    async with open_remote(target, ssh, clock, note) as remote:
        return await pull_over(remote, target, ssh, clock, note, progress=progress)


MAX_LANES = 4  # connections a striped pull may use, the first included


async def _extra_lanes(
    stack: contextlib.AsyncExitStack, remote: Any, target: Target, ssh: SSHApi, note: Callable[[str], None]
) -> list[Any]:
    """More connections to the same machine for a striped pull (GPUJOB_PULL_STRIPES above 1): each
    stripe of a large file gets its own TCP stream, which is what fills a long, lossy link. The host key
    is the one the first connection pinned. One that cannot be opened is done without, not an error."""
    from gpujob.ssh.pull import stripe_count

    endpoint = getattr(remote, "endpoint", None)
    want = min(stripe_count(), MAX_LANES) - 1
    if want <= 0 or not isinstance(endpoint, SSHEndpoint):
        return []
    key_path, _ = ssh.ensure_project_key(target.state_dir)
    lanes: list[Any] = []
    for _ in range(want):
        cm = ssh.open(
            endpoint,
            key_path=key_path,
            known_hosts=as_store(target.state_dir),
            resource_id=target.resource.id,
            timeout=ATTEMPT_S,
        )
        try:
            lanes.append(await stack.enter_async_context(cm))
        except (SSHConnectError, OSError) as exc:
            note(
                f"{target.spec.name}: pull: an extra connection failed ({str(exc)[:120]}); going on with fewer"
            )
            break
    note(f"{target.spec.name}: pull: large files striped over {len(lanes) + 1} connections")
    return lanes


async def pull_over(
    remote: Any,
    target: Target,
    ssh: SSHApi,
    clock: Clock,
    note: Callable[[str], None],
    *,
    progress: Any = None,
) -> PullRecord:
    """The pull on an open connection (the teardown gate's final pull shares its connection)."""
    spec = target.spec
    ck = spec.checkpoint
    assert ck is not None
    local_dir = pull_dir(spec, target.spec_path)
    local_dir.mkdir(parents=True, exist_ok=True)
    async with contextlib.AsyncExitStack() as stack:
        lanes = await _extra_lanes(stack, remote, target, ssh, note)
        with transfer_reporting("pull", note) as fallback:
            outcome = await ssh.pull_checkpoints(
                remote,
                ck.dir,
                local_dir,
                verify=None,
                progress=progress or fallback,
                **({"lanes": lanes} if lanes else {}),
            )
    if outcome.unpullable:
        note(
            f"not pullable, skipped: {_names(outcome.unpullable)} (rename or remove them on the "
            f"{target.resource.kind}: gpujob ssh -- ls -la {shlex.quote(ck.dir)})"
        )
    if outcome.vanished:
        note(f"removed by the run while pulling (its keep: {ck.keep} rotation): {_names(outcome.vanished)}")
    now = clock.now()
    # A file verified in the last pull is not checked again, if that pull read this very disk.
    here = target.resource
    previous = current_record(load_pull_record(target.state_dir, spec.name), here, [here.network_volume_id])
    # The load check runs here, from the job file's directory, where its relative paths point.
    files = [
        await _as_pulled_file(p, local_dir, ck.verify, now, target.spec_path.parent, previous)
        for p in outcome.files
    ]
    listing = outcome.listing
    remote_files = {} if listing is None else {n: f.sha256 for n, f in listing.files.items()}
    for gone in outcome.vanished:
        remote_files.pop(gone, None)
    record = PullRecord(
        job=spec.name,
        platform=spec.platform,
        resource_id=target.resource.id,
        network_volume_id=target.resource.network_volume_id,
        tier=checkpoint_tier(spec) or "",
        remote_dir=ck.dir,
        local_dir=str(local_dir),
        remote_files=remote_files,
        files=files,
        vanished=list(outcome.vanished),
        unpullable=dict(outcome.unpullable),
        verify_command=ck.verify,
        at=now,
    )
    save_pull_record(target.state_dir, record)
    return record


def _names(names: Any, limit: int = 5) -> str:
    """Untrusted remote names for one line: repr-escaped (a newline stays \\n), at most `limit`."""
    shown = [repr(n) for n in list(names)[:limit]]
    more = len(names) - len(shown)
    return ", ".join(shown) + (f" and {more} more" if more > 0 else "")


async def _as_pulled_file(
    item: Any, local_dir: Path, verify: str | None, now: datetime, cwd: Path, previous: PullRecord | None
) -> PulledFile:
    """Checksum the local copy here (the record is ours), then verify it, unless this very copy
    already passed the same verify command in the previous record."""
    from gpujob import verify as verify_cmd

    local = local_dir / item.name
    digest = await asyncio.to_thread(local_sha256, local)
    size = local.lstat().st_size if digest else 0
    before = previous.file(item.name) if previous is not None else None
    output = ""
    if (
        before is not None
        and before.verified
        and digest
        and before.sha256 == digest
        and previous is not None
        and previous.verify_command == verify
    ):
        verified = True
    elif verify and digest:
        verified, output = await verify_cmd.run_async(verify, local, cwd)
    else:
        verified = False
    return PulledFile(
        name=item.name,
        size=size,
        sha256=digest,
        remote_sha256=item.remote_sha256,
        verified=verified and digest != "",
        at=now,
        local_path=str(local),
        verify_output="" if verified else output,
    )


def local_sha256(path: Path) -> str:
    """sha256 of a regular local file, never through a symlink in its last part; "" when there is none."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return ""
    h = hashlib.sha256()
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
            return ""
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()
