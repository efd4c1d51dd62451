"""The run over SSH: wait for the endpoint, connect with pinned host keys, sync, launch, pull.

Used by the applier (LAUNCH and PULL steps) and by `status`, `logs`, `pull` and `ssh`.
"""

from __future__ import annotations

import contextlib
import hashlib
import shlex
import subprocess
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from gpujob.apply.gate import checkpoint_tier
from gpujob.apply.progress import reporter_of
from gpujob.apply.records import PulledFile, PullRecord, save_pull_record
from gpujob.apply.sshapi import SSHApi
from gpujob.clock import Clock
from gpujob.errors import GpujobError, SSHConnectError
from gpujob.live import LiveResource, SSHEndpoint
from gpujob.providers.base import Provider
from gpujob.spec.model import JobSpec
from gpujob.state import StateRef, as_store

ENDPOINT_WAIT_S = 600.0
LAUNCH_ATTEMPTS = 3
POLL_S = 3.0


@dataclass
class Target:
    """One job's machine as the SSH side needs it."""

    spec: JobSpec
    spec_path: Path
    provider: Provider
    resource: LiveResource
    state_dir: StateRef  # the project's store (a Path: a local state directory)
    moved: bool = False  # created or started by this apply: the host (and its key) may be new


def collect_secrets(spec: JobSpec, env: Mapping[str, str]) -> dict[str, str]:
    """Values of run.secrets from the local environment. Missing ones are named (never valued)."""
    names = spec.run.secrets if spec.run else []
    missing = [n for n in names if not env.get(n)]
    if missing:
        raise GpujobError(
            f"{spec.name}: secret(s) not set in the local environment: {', '.join(missing)}",
            hint="export them before apply; gpujob passes their values over SSH and never stores them",
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


async def wait_for_endpoint(target: Target, clock: Clock, note: Callable[[str], None]) -> SSHEndpoint:
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
            if (clock.now() - started).total_seconds() > ENDPOINT_WAIT_S:
                raise SSHConnectError(
                    f"{target.spec.name}: no SSH endpoint after {ENDPOINT_WAIT_S:.0f}s ({kind} is {fresh.raw_status or fresh.status})",
                    hint="check the platform console; re-run apply to resume",
                )
            if not announced:
                what = f"waiting for the SSH endpoint of {fresh.name} ({fresh.raw_status or fresh.status})"
                reporter = reporter_of(note)
                if reporter is None:
                    note(what)
                else:
                    await waits.enter_async_context(reporter.waiting(what, ENDPOINT_WAIT_S))
                announced = True
            await clock.sleep(POLL_S)


@contextlib.asynccontextmanager
async def open_remote(
    target: Target, ssh: SSHApi, clock: Clock, note: Callable[[str], None]
) -> AsyncIterator[Any]:
    """Connect with the project key and the pinned host key, retrying while sshd comes up."""
    key_path, _ = ssh.ensure_project_key(target.state_dir)
    known_hosts = as_store(target.state_dir)
    started = clock.now()
    reporter = reporter_of(note)
    async with contextlib.AsyncExitStack() as waits:
        waiting = False
        while True:
            endpoint = await wait_for_endpoint(target, clock, note)
            try:
                cm = ssh.open(
                    endpoint,
                    key_path=key_path,
                    known_hosts=known_hosts,
                    resource_id=target.resource.id,
                    expect_new_host=target.moved,
                )
                remote = await cm.__aenter__()
            except SSHConnectError as exc:
                if (clock.now() - started).total_seconds() > ENDPOINT_WAIT_S:
                    raise
                what = f"SSH to {endpoint.host}:{endpoint.port} not ready yet ({str(exc).splitlines()[0]})"
                if reporter is None:
                    note(f"{what}; retrying")
                elif not waiting:  # one spinner for the whole wait; the reason of the first try names it
                    await waits.enter_async_context(reporter.waiting(what, ENDPOINT_WAIT_S))
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
        started = await ssh.launch_run(remote, spec, secrets=secrets)
    if started is False:
        return "run already alive: not relaunched"
    return f"run launched on {target.resource.name}"


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


LISTING = "cd {dir} 2>/dev/null && find . -type f ! -name '*.tmp' ! -name '.*' -print0 | xargs -0 -r sha256sum || true"
SIZES = "cd {dir} 2>/dev/null && find . -type f ! -name '*.tmp' ! -name '.*' -printf '%s\\n' | awk '{{s+=$1}} END {{print s+0}}'"


async def remote_listing(remote: Any, remote_dir: str) -> dict[str, str]:
    """name (relative to the dir) -> sha256 of every finished checkpoint file on the remote."""
    where = shlex.quote(remote_dir)
    what = f"listing checkpoints in {remote_dir}"
    sizes = await remote.run(SIZES.format(dir=where), check=False, what=what, left="nothing was pulled yet")
    total = str(getattr(sizes, "stdout", "") or "").strip()
    # sha256sum is silent while it reads a file: the wait for its answer is sized from the data.
    bound = remote.limits.for_bytes(int(total) if total.isdigit() else 0)
    result = await remote.run(
        LISTING.format(dir=where),
        check=False,
        timeout=bound,
        idle=bound,
        what=f"hashing the checkpoints in {remote_dir}",
        left="nothing was pulled yet",
    )
    out: dict[str, str] = {}
    for line in str(getattr(result, "stdout", "") or "").splitlines():
        digest, _, name = line.partition("  ")
        if len(digest) == 64 and name:
            out[name.removeprefix("./")] = digest
    return out


NAMES = "cd {dir} 2>/dev/null && find . -type f ! -name '*.tmp' ! -name '.*' -print0; true"


async def _settle_listing(
    remote: Any, remote_dir: str, listing: dict[str, str], pulled: list[Any]
) -> dict[str, str]:
    """A running job keeps its newest N checkpoints: a file listed before the pull and deleted by the
    run during it was superseded, not missed, and a newer one the pull went back for belongs in the
    listing. So: what was pulled (with its remote checksum), plus listed files still on the remote."""
    got = {str(_first(p, "name")): str(_first(p, "remote_sha256") or "") for p in pulled}
    missing = set(listing) - set(got)
    present: set[str] = set()
    if missing:
        out = await remote.run(
            NAMES.format(dir=shlex.quote(remote_dir)), check=False, what=f"listing {remote_dir}"
        )
        present = {n.removeprefix("./") for n in str(getattr(out, "stdout", "") or "").split("\0") if n}
    kept = {n: h for n, h in listing.items() if n in got or n in present}
    return kept | {n: h for n, h in got.items() if n not in kept and h}


async def pull(
    target: Target, ssh: SSHApi, clock: Clock, note: Callable[[str], None], *, progress: Any = None
) -> PullRecord:
    """List, pull, checksum and verify every checkpoint, then write the pull record."""
    spec = target.spec
    ck = spec.checkpoint
    if ck is None:
        raise GpujobError(f"{spec.name}: no checkpoint section: nothing to pull")
    if target.resource.status != "running":
        raise GpujobError(
            f"{spec.name}: cannot pull: {target.resource.name} is {target.resource.status}",
            hint="set state: running and apply (the disks are kept), then pull",
        )
    local_dir = Path(ck.pull_to)
    if not local_dir.is_absolute():
        local_dir = (target.spec_path.parent / local_dir).resolve()
    local_dir.mkdir(parents=True, exist_ok=True)
    async with open_remote(target, ssh, clock, note) as remote:
        listing = await remote_listing(remote, ck.dir)
        # The load check runs here, from the job file's directory, where its relative paths point.
        with transfer_reporting("pull", note) as fallback:
            pulled = await ssh.pull_checkpoints(
                remote, ck.dir, local_dir, verify=None, progress=progress or fallback
            )
        listing = await _settle_listing(remote, ck.dir, listing, pulled)
    now = clock.now()
    cwd = target.spec_path.parent
    files = [_as_pulled_file(p, local_dir, listing, ck.verify, now, cwd) for p in pulled]
    record = PullRecord(
        job=spec.name,
        platform=spec.platform,
        resource_id=target.resource.id,
        network_volume_id=target.resource.network_volume_id,
        tier=checkpoint_tier(spec) or "",
        remote_dir=ck.dir,
        local_dir=str(local_dir),
        remote_files=listing,
        files=files,
        verify_command=ck.verify,
        at=now,
    )
    save_pull_record(target.state_dir, record)
    return record


def _as_pulled_file(
    item: Any, local_dir: Path, listing: Mapping[str, str], verify: str | None, now: datetime, cwd: Path
) -> PulledFile:
    """Normalise what the SSH layer returns; checksum the local copy here so the record is ours."""
    name = str(_first(item, "name"))
    local = local_dir / name
    digest = _sha256(local) if local.is_file() else ""
    remote_digest = _first(item, "remote_sha256") or listing.get(name)
    verified = _first(item, "verified")
    if not isinstance(verified, bool):
        verified = bool(verify) and digest != "" and _run_verify(verify or "", local, cwd)
    return PulledFile(
        name=name,
        size=local.stat().st_size if local.is_file() else 0,
        sha256=digest,
        remote_sha256=remote_digest,
        verified=bool(verified) and digest != "",
        at=now,
        local_path=str(local),
    )


def _first(item: Any, *names: str) -> Any:
    for n in names:
        value = item.get(n) if isinstance(item, dict) else getattr(item, n, None)
        if value is not None:
            return value
    return None


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _run_verify(template: str, path: Path, cwd: Path) -> bool:
    """The user's load check, run locally from the job file's directory."""
    cmd = template.replace("{file}", shlex.quote(str(path)))
    return subprocess.run(cmd, shell=True, capture_output=True, cwd=cwd).returncode == 0
