"""Outputs as a capability (gpujob.plan.capability): what a stop, terminate or volume delete does to the
job's outputs, and when they were last pulled (gpujob.outputs.plan); the teardown gate pulls and checks
them before a disk holding them is erased (gpujob.outputs.gate)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from gpujob.outputs.command import pull_outputs
from gpujob.outputs.gate import protect
from gpujob.outputs.plan import outputs_line
from gpujob.plan.capability import Capability
from gpujob.watch.hooks import WatchHooks


class Outputs(Capability):
    name = "outputs"

    def data_effect_line(self, ctx: Any, survives: Callable[[str], bool]) -> str:
        return outputs_line(ctx, survives, ctx.now)

    async def before_erase(
        self, ctx: Any, action: Any, remote: Any, machine: Any, erased: Callable[[Any], bool]
    ) -> str:
        return await protect(
            remote,
            ssh=ctx.ssh,
            spec=ctx.spec,
            spec_path=ctx.spec_path,
            state_dir=ctx.state_dir,
            resource_id=machine.id,
            erased=erased,
            now=ctx.clock.now(),
            note=ctx.note,
            action_id=action.id,
            where=f"{machine.name} ({machine.id})",
        )

    def watch_hooks(self, options: Any) -> Any:
        return OutputsWatch()


class OutputsWatch(WatchHooks):
    """`gpujob watch` brings a job's outputs home with the same pull as `gpujob pull` (its final pull)."""

    def outputs_pull(self) -> Any:
        return pull_outputs
