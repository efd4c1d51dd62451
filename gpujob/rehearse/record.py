"""The recorded outcome of a drill, and what the plan of a spot job says about it."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import Field

from gpujob.model import Model


class Rehearsal(Model):
    job: str
    platform: str
    at: datetime = Field(description="When the job was interrupted (UTC).")
    machine_id: str = Field(description="The machine interrupted.")
    how: str = Field(
        description="How it was interrupted: the simulator's preemption, or a stop through the API."
    )
    ok: bool = Field(description="The run resumed from a step at or past the newest verified checkpoint.")
    checkpoint: str | None = Field(None, description="The newest verified checkpoint before the interrupt.")
    checkpoint_step: int | None = None
    step_before: int | None = Field(None, description="The run's newest step read just before the interrupt.")
    resume_step: int | None = Field(
        None, description="The step the new run resumed from (its first step - 1)."
    )
    detection_s: float | None = Field(None, description="Interrupt -> watch acts on it.")
    recovery_s: float | None = Field(None, description="Interrupt -> the new run's first step.")
    redone_steps: int | None = Field(
        None, description="Steps done before the interrupt and done again after it."
    )
    seconds_per_step: float | None = None
    usd_per_hour: float | None = None
    redone_usd: float | None = Field(None, description="What the redone steps cost at the machine's rate.")
    recovery_usd: float | None = Field(None, description="What the recovery time cost at the same rate.")
    priced_from: str = Field("", description="Where the rate and the step time came from.")
    detail: str = ""

    def line(self) -> str:
        """One line: the plan's and the command's summary."""
        if not self.ok:
            return f"rehearsal {self.at:%Y-%m-%d} FAILED: {self.detail}"
        money = f", ${self.redone_usd:.4f}" if self.redone_usd is not None else ""
        redone = f"; redone {self.redone_steps} step(s){money}" if self.redone_steps is not None else ""
        detect = f"detected in {self.detection_s:.0f} s, " if self.detection_s is not None else ""
        paid = f", ${self.recovery_usd:.4f}" if self.recovery_usd is not None else ""
        return (
            f"rehearsed {self.at:%Y-%m-%d}: recovery {self.recovery_s or 0:.0f} s{paid} ({detect}resumed from step "
            f"{self.resume_step} >= checkpoint step {self.checkpoint_step}){redone}"
        )


def record_name(job: str) -> str:
    return f"rehearsals/{job}.json"


def save(state: Any, rehearsal: Rehearsal) -> None:
    from gpujob.state import write_model

    write_model(state, record_name(rehearsal.job), rehearsal)


def load(state: Any, job: str) -> Rehearsal | None:
    """None for none or an unreadable one: the plan then says it was never rehearsed."""
    from gpujob.state import read_model

    return read_model(state, record_name(job), Rehearsal)


def plan_finding(ctx: Any) -> list[Any]:
    """The plan of a spot job with a checkpoint block: its last drill, or that it never had one."""
    spec = ctx.spec
    if not spec.machine.spot or spec.checkpoint is None or spec.state == "absent":
        return []
    path = getattr(ctx.loaded, "path", None)
    found = None
    if path is not None:
        from gpujob.errors import GpujobError
        from gpujob.state import open_store

        try:
            found = load(open_store(path), spec.name)
        except (GpujobError, OSError):  # a store that cannot be read from here proves no drill
            found = None
    if found is None:
        return [
            ctx.finding(
                "rehearse",
                "info",
                "never rehearsed: no drill has shown this job resumes after a preemption",
                fix="once it runs: gpujob rehearse (interrupts it as the platform would, recovers it as watch "
                "does, proves the resume step)",
                key="machine.spot",
            )
        ]
    return [ctx.finding("rehearse", "info" if found.ok else "warning", found.line(), key="machine.spot")]
