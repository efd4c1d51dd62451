"""Watch's look at the disks: warn at 90 % of bytes or inodes, pull and park before one is full.

Read at most every CHECK_EVERY_S per job, over its own short connection (gpujob.disks.usage). A machine
that does not answer is the probe's and the tick's business, not this one's: the read is skipped.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from gpujob.disks.usage import PARK_AT, warnings
from gpujob.errors import GpujobError

CHECK_EVERY_S = 30.0


class DiskGuard:
    def __init__(self, ssh: Any, clock: Any, *, every_s: float = CHECK_EVERY_S) -> None:
        self.ssh = ssh
        self.clock = clock
        self.every_s = every_s
        self._last: dict[str, datetime] = {}

    async def check(self, j: Any, machine: Any, provider: Any, say: Callable[..., None]) -> str | None:
        """Warn about a disk past 90 %; return a reason to park when one is past PARK_AT."""
        from gpujob.apply import runtime

        read = getattr(self.ssh, "read_disks", None)
        spec = j.loaded.spec
        if read is None or machine is None or machine.status != "running" or spec.run is None:
            return None
        now = self.clock.now()
        last = self._last.get(j.name)
        if last is not None and (now - last).total_seconds() < self.every_s:
            return None
        self._last[j.name] = now
        target = runtime.Target(spec=spec, spec_path=j.loaded.path, provider=provider, resource=machine,
                                state_dir=j.state_dir)  # fmt: skip
        try:
            async with runtime.open_remote(target, self.ssh, self.clock, lambda _t: None) as remote:
                usages = await read(remote, spec)
        except GpujobError:
            return None
        for line in warnings(usages):
            say(j, "disk", line, level="warning", topic=f"disk {line.split()[0]}")
        for u in usages:
            what, frac = u.fullest
            if frac >= PARK_AT:
                return (f"disk {u.path} is {frac:.0%} full ({what}): parked before a checkpoint save into it "
                        "fails (U6/U7)")  # fmt: skip
        return None
