"""RunPod's pod migration, followed rather than fought.

A stopped pod whose machine has no free GPU can be migrated: RunPod spins up "a new Pod with a new ID and
IP address" with the same specifications and data (docs.runpod.io/references/troubleshooting/pod-migration,
beta since about December 2025, read 2026-12-07). gpujob recognises the new pod as the job's by what the
ownership rule already reads (gpujob.naming: its name and its GPUJOB_PROJECT/GPUJOB_OWNER env markers), and
by its storage: the same network volume, when the job has one. What is new is only the id: the launch
record (launches/<job>.json) still names the old one. A pod is "migrated from" that id when

  * the job's pod (name and markers agree) has another id than the launch record, and
  * the recorded pod no longer exists on the platform (a migration replaces it: one pod, never two), and
  * the new pod mounts the job's network volume when the job has one (a pod on other storage is not the
    job's data come back: it plans as it always did).

The plan then says so (finding `pod-migrated`) and plans no create and no destroy for it; status, apply and
watch adopt the new id in the state (gpujob.apply.migration) with an event."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from gpujob.live import LiveResource
from gpujob.plan.model import Finding

SOURCE = "docs.runpod.io/references/troubleshooting/pod-migration (beta; read 2026-12-07)"


@dataclass(frozen=True)
class Migration:
    old_id: str
    new: LiveResource

    def describe(self) -> str:
        where = f" at {self.new.ssh.host}:{self.new.ssh.port}" if self.new.ssh else ""
        return f"pod {self.old_id} was migrated by RunPod to pod {self.new.id}{where} (new id and IP)"


def migrated(
    record: Any,
    machine: LiveResource | None,
    resources: Sequence[LiveResource],
    volume: LiveResource | None = None,
) -> Migration | None:
    """The migration that made `machine` the job's pod in place of the recorded one, or None."""
    if record is None or machine is None or machine.kind != "pod" or machine.platform != "runpod":
        return None
    old = getattr(record, "resource_id", None)
    if not old or old == machine.id:
        return None
    if any(r.id == old for r in resources):
        return None  # the recorded pod is still there: two pods, not a migration
    if volume is not None and machine.network_volume_id != volume.id:
        return None
    return Migration(old_id=str(old), new=machine)


def finding(ctx: Any) -> list[Finding]:
    """`pod-migrated` (info) when the job's pod is a migrated one."""
    m = migrated(ctx.launch_record, ctx.machine, ctx.live.resources, ctx.volume)
    if m is None:
        return []
    return [
        ctx.finding(
            "pod-migrated",
            "info",
            f"{m.describe()}: it is the job's pod (same name, ownership markers, env and volume), so nothing "
            "is created beside it and nothing is destroyed",
            detail="RunPod's pod migration gives a stopped pod whose GPU was taken a new pod on another machine "
            "with the same specifications and data. gpujob adopts the new id in its state at the next status, "
            f"apply or watch; checkpoints are read where they were. Source: {SOURCE}.",
            fix="",
            key="machine",
        )
    ]
