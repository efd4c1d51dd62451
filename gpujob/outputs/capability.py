"""Outputs as a capability (gpujob.plan.capability): what a stop, terminate or volume delete does to the
job's outputs, and when they were last pulled (gpujob.outputs.plan)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from gpujob.outputs.plan import outputs_line
from gpujob.plan.capability import Capability


class Outputs(Capability):
    name = "outputs"

    def data_effect_line(self, ctx: Any, survives: Callable[[str], bool]) -> str:
        return outputs_line(ctx, survives, ctx.now)
