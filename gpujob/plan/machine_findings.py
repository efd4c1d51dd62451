"""Machine timer and address findings (Paperspace): an auto-shutdown that fires mid-run, and a static IP
that bills while the machine is off.
"""

from __future__ import annotations

from datetime import timedelta

from gpujob.cost.rates import usd
from gpujob.jobfile.model import format_duration
from gpujob.plan.context import JobContext
from gpujob.plan.model import Finding


def auto_shutdown_findings(ctx: JobContext) -> list[Finding]:
    spec = ctx.spec
    if spec.platform != "paperspace" or spec.state == "absent":
        return []
    m, runtime = spec.machine, spec.run.max_runtime if spec.run else None
    core = next((a for a in ctx.profile.auto_shutdown if a.kind == "core"), None)
    cap = timedelta(hours=core.max_hours) if core and core.max_hours else None
    out: list[Finding] = []
    if m.auto_shutdown is not None and runtime is not None and runtime > m.auto_shutdown:
        has_ck = spec.checkpoint is not None
        out.append(
            ctx.finding(
                "PS2",
                "warning" if has_ck else "error",
                f"max_runtime {format_duration(runtime)} is longer than auto_shutdown "
                f"{format_duration(m.auto_shutdown)}: the machine powers off mid-run",
                detail="Core auto-shutdown on Linux is a wall-clock timer; an open SSH or tmux session does not "
                "hold it off."
                + ("" if has_ck else " Without a checkpoint block the work since launch is lost."),
                fix=f"set machine.auto_shutdown to at least {format_duration(runtime)}"
                + (" (the platform allows at most 1w)" if cap and runtime > cap else ""),
                key="machine.auto_shutdown",
            )
        )
    elif m.auto_shutdown is None:
        suggestion = format_duration(min(runtime, cap) if runtime and cap else runtime) if runtime else "48h"
        out.append(
            ctx.finding(
                "PS2",
                "warning",
                "auto_shutdown is unset: nothing powers off a forgotten machine",
                detail="The GPU bills by the hour until someone stops it."
                + (f" The run is expected to take up to {format_duration(runtime)}." if runtime else ""),
                fix=f"set machine.auto_shutdown: {suggestion} (set it before the machine is created; changing it later is unreliable)",
                key="machine",
            )
        )
    if runtime is not None and cap is not None and runtime > cap:
        out.append(
            ctx.finding(
                "PS2",
                "warning",
                f"max_runtime {format_duration(runtime)} exceeds the longest auto-shutdown (1w)",
                fix="make the run resumable from checkpoints and expect at least one restart",
                key="run.max_runtime",
            )
        )
    return out


def static_ip_findings(ctx: JobContext) -> list[Finding]:
    spec = ctx.spec
    # state: stopped gets the sharper PS1 warning on its stop action instead
    if spec.platform != "paperspace" or spec.state != "running":
        return []
    if spec.machine.public_ip == "static":
        addon = ctx.profile.addon("static_ip")
        return [
            ctx.finding(
                "PS1",
                "info",
                f"the static IP bills while the machine is off (capped at {usd(addon.monthly_cap_usd)}/mo) "
                "until it is released",
                fix="state: absent releases it; public_ip: dynamic avoids it (the address then changes each start, PS6)",
                key="machine.public_ip",
            )
        ]
    return []
