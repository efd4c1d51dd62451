"""Disks as a capability (gpujob.plan.capability): the container disk findings of a run's setup (RP11),
and the read of disk usage over SSH (gpujob.disks.usage) that gpujob watch parks a full disk by."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from gpujob.disks.findings import container_disk_findings
from gpujob.disks.guard import DiskGuard
from gpujob.disks.usage import read_disks
from gpujob.plan.capability import Capability
from gpujob.plan.model import Finding
from gpujob.watch.hooks import WatchHooks


class Disks(Capability):
    name = "disks"

    def disk_findings(self, ctx: Any) -> list[Finding]:
        return container_disk_findings(ctx)

    def ssh_functions(self) -> dict[str, Callable[..., Any]]:
        return {"read_disks": read_disks}  # bytes and inodes used on the durable mount and /

    def watch_hooks(self, options: Any) -> Any:
        return DisksWatch()


class DisksWatch(WatchHooks):
    """`gpujob watch` warns at 90 % of a disk's bytes or inodes and parks the job before one is full."""

    def __init__(self) -> None:
        self.guard: DiskGuard | None = None

    async def park_reason(self, watcher: Any, j: Any, machine: Any, provider: Any) -> str | None:
        if self.guard is None:  # over the watcher's SSH layer and clock
            self.guard = DiskGuard(watcher.spy.api, watcher.clock)
        return await self.guard.check(j, machine, provider, watcher.say)
