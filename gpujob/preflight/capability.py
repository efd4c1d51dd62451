"""Preflight as a capability (gpujob.plan.capability): before a run is launched, the GPU host is checked
fit to train on (gpujob.preflight.hook); a bad host is stopped and the machine made again."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from gpujob.plan.capability import Capability
from gpujob.preflight.hook import before_launch
from gpujob.preflight.probe import read_gpu_host


class Preflight(Capability):
    name = "preflight"

    def ssh_functions(self) -> dict[str, Callable[..., Any]]:
        return {"read_gpu_host": read_gpu_host}  # the preflight's read of the GPU host

    async def before_launch(self, ctx: Any, action: Any, recreate: Callable[..., Any]) -> None:
        await before_launch(ctx, action, recreate=recreate)
