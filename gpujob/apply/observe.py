"""Read-side helpers for `status`, `logs`, `pull` and `ssh`: find each job's machine and reach it."""

from __future__ import annotations

import contextlib
import shlex
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from gpujob.apply.runtime import Target
from gpujob.errors import GpujobError
from gpujob.live import LiveNode, LiveResource
from gpujob.naming import machine_kind_of
from gpujob.plan.capability import installed
from gpujob.plan.records import PullRecord, current_record, load_pull_record
from gpujob.state import StateRef, Store, as_store, open_store


@dataclass
class JobView:
    loaded: Any  # LoadedSpec
    state_dir: Store  # the project's store
    provider: Any
    machine: LiveResource | None
    volume: LiveResource | None
    pull: PullRecord | None
    # Every provider opened (a job with fallback entries may hold resources on another platform).
    providers: Mapping[str, Any] = field(default_factory=dict)
    listed: Sequence[LiveResource] = ()  # everything its platform listed (a migrated pod's old id: gone)
    # A multi-node job's members in rank order (gpujob.live.LiveNode); empty for a one-machine job.
    nodes: list[LiveNode] = field(default_factory=list)

    @property
    def spec(self) -> Any:
        return self.loaded.spec

    def target(self) -> Target:
        if self.machine is None:
            raise GpujobError(
                f"{self.spec.name}: this checkout's {'pod' if self.spec.platform == 'runpod' else 'machine'} "
                "does not exist",
                hint="gpujob apply (desired state running) creates it",
            )
        return Target(
            spec=self.spec,
            spec_path=self.loaded.path,
            provider=self.provider,
            resource=self.machine,
            state_dir=self.state_dir,
        )


@contextlib.asynccontextmanager
async def job_views(loaded: Sequence[Any]) -> AsyncIterator[list[JobView]]:
    """One list_resources per platform, each job's machine and volume picked by deterministic name."""
    from gpujob.naming import machines, owned, volume_name
    from gpujob.project import with_projects
    from gpujob.providers.registry import open_providers

    placed = with_projects(loaded, create=False)  # where each runs now, and what its record names
    platforms = {ls.spec.platform for ls in placed}
    for cap in installed():  # e.g. fallback entries, strays (gpujob.failover)
        platforms |= cap.platforms_read(placed)
    async with open_providers(platforms) as providers:
        listed: dict[str, list[LiveResource]] = {}
        for platform, provider in providers.items():
            listed[platform] = await provider.list_resources()
        views = []
        for ls in placed:
            spec = ls.spec
            mine = owned(listed[spec.platform], spec.name, ls.project)
            kind = machine_kind_of(spec.platform, spec.machine.nodes)
            machine = next((r for r in machines(mine, spec.name, ls.project) if r.kind == kind), None)
            nv = spec.storage.network_volume
            vname = volume_name(spec.name, nv.name, ls.project) if nv and ls.project else None
            volume = next((r for r in mine if r.kind == "network_volume" and r.name == vname), None)
            sdir = open_store(ls.path)
            # The last pull is shown only for the machine or volume it came from, never for a replacement.
            pulled = current_record(load_pull_record(sdir, spec.name), machine, [volume])
            nodes = list(machine.nodes) if machine is not None else []
            views.append(
                JobView(
                    ls,
                    sdir,
                    providers[spec.platform],
                    machine,
                    volume,
                    pulled,
                    providers,
                    listed[spec.platform],
                    nodes,
                )
            )
        yield views


FOLLOW_SLICE = 1 << 20


async def follow_log(
    remote: Any,
    log_path: str,
    write: Callable[[str], None],
    *,
    lines: int,
    follow: bool,
    alive: Callable[[], Any],
    sleep: Callable[[float], Any],
    poll_s: float = 1.0,
) -> None:
    """Print the last `lines` of the log, then (with follow) new bytes until the run stops. Every line
    is cut to logread.LINE_CAP (on the machine for the first read; here for followed slices, which are
    read at most FOLLOW_SLICE at a time)."""
    from gpujob.ssh.logread import LineCutter, expand, tail_command

    path = shlex.quote(log_path)
    first = await remote.run(
        tail_command(log_path, lines), check=False, what=f"reading the last {int(lines)} lines of {log_path}"
    )
    write(expand(first.stdout))
    if not follow:
        return
    size = await _size(remote, path)
    cutter = LineCutter()
    while True:
        await sleep(poll_s)
        new = await remote.run(
            f"tail -c +{size + 1} {path} 2>/dev/null | head -c {FOLLOW_SLICE}; true", check=False
        )
        if new.stdout:
            write(cutter.feed(new.stdout))
            size += len(new.stdout.encode())
            continue
        if not await alive():
            write(cutter.flush())
            return


async def _size(remote: Any, path: str) -> int:
    out = await remote.run(f"stat -c %s {path} 2>/dev/null || echo 0", check=False)
    try:
        return int(out.stdout.strip() or 0)
    except ValueError:
        return 0


def known_hosts_line(state: StateRef, resource_id: str, host: str, port: int) -> str | None:
    """The pinned host key of a resource as an OpenSSH known_hosts line for this endpoint."""
    from gpujob.errors import SSHConnectError
    from gpujob.ssh.hostkeys import HostKeyPins

    try:
        pins: Mapping[str, Any] = HostKeyPins(as_store(state)).load()
    except SSHConnectError:
        return None
    entry = pins.get(resource_id)
    if not isinstance(entry, dict) or "key" not in entry:
        return None
    name = host if port == 22 else f"[{host}]:{port}"
    return f"{name} {entry['key']}"
