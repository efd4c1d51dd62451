"""Planning from the run facts (LiveState.runs): relaunch a lost run, finish a launch a killed apply
left undone, apply teardown.on_finish to a run that exited 0, and never restart a run already marked
finished for this job file. Pure: the facts were read during refresh (gpujob.apply.runfacts).
"""

from __future__ import annotations

import re

from gpujob.invariant import present
from gpujob.live import RunFact, booting
from gpujob.plan import action_findings as af
from gpujob.plan.builder import stop, terminate
from gpujob.plan.checkpoint_actions import launch_run, previous_ck_dir, pull_checkpoints
from gpujob.plan.context import JobContext
from gpujob.plan.model import ActionKind
from gpujob.plan.replace import run_address, run_forced
from gpujob.plan.run_diff import plan_relaunch

K = ActionKind


def plan_finished(ctx: JobContext) -> None:
    """The run exited 0 for this exact job file (journal mark): not started again; what is still up
    gets its teardown.on_finish (a kill mid-teardown is finished on the next apply)."""
    m = ctx.machine
    verb = ctx.spec.teardown.on_finish
    if m is not None and m.status == "running" and verb != "keep":
        _on_finish(ctx, _finished_why(ctx, verb))


def _finished_why(ctx: JobContext, verb: str) -> str:
    q = getattr(ctx.loaded, "sweep", None)
    if q is not None and ctx.spec.teardown.on_finish == "stop":
        # the user's file may say keep: a sweep reads it as stop (gpujob.layout.queues.queue_spec)
        return (
            f"queue q{q.n} of sweep {q.sweep_job} drained (its run exited 0): a drained queue's machine stops"
        )
    return f"the run exited 0 and teardown.on_finish is {verb}"


def plan_run(ctx: JobContext, fact: RunFact) -> None:
    """After the machine rules: what the run itself needs, when the machine is up and nothing else
    already launches it."""
    m = ctx.machine
    if m is None or m.status not in ("running", "pending") or any(a.kind is K.LAUNCH for a in ctx.actions):
        return
    changed = fact.launched_digest is not None and fact.launched_digest != ctx.loaded.digest
    _fact_findings(ctx, fact, changed)
    old = previous_ck_dir(ctx)
    if fact.state == "running" and old is not None and ctx.spec.checkpoint is not None:
        ctx.findings.append(
            ctx.finding(
                "checkpoint-dir",
                "info",
                f"checkpoint.dir is now {ctx.spec.checkpoint.dir}, but the run alive writes {old}: it keeps "
                "doing so until it is launched again, and that launch first moves its checkpoints over",
                key="checkpoint.dir",
            )
        )
    if m.status != "running" or fact.state is None or fact.state == "unknown":
        if fact.launch_pending:
            launch_run(
                ctx,
                None,
                first="a previous apply stopped before the run was launched (see the journal in gpujob's state): launch it now",
            )
        elif booting(m):
            # Booting (a migrated pod, a restart): no run can be alive on it yet, and the launch checks
            # that again once the machine answers, so it never starts a second one.
            launch_run(
                ctx,
                None,
                first=f"{ctx.machine_kind} {m.name} is still starting ({m.raw_status or m.status}): apply waits "
                "for it to run, then launches the run unless one is already alive",
            )
        return
    if fact.state == "running":
        plan_relaunch(ctx, fact, forced=run_forced(ctx))
        return
    if fact.state in ("lost", "exited") and (fact.ended or "").startswith(OOM) and not changed:
        _after_oom(ctx, fact)
        return
    if fact.state == "lost":
        since = f" at {fact.started_at}" if fact.started_at else ""
        launch_run(
            ctx,
            None,
            first=f"run lost: started{since}, no longer alive and no exit code "
            "(the container restarted or the process was killed): relaunch it",
            resume=_resume_from(fact),
        )
        return
    if fact.state == "not_started":
        launch_run(
            ctx,
            None,
            first=f"run not started: {ctx.machine_kind} {m.name} is running but no run was ever started on it",
        )
        return
    if run_forced(ctx):
        launch_run(ctx, None, first=f"asked for: --replace {run_address(ctx.job)}", resume=_resume_from(fact))
        return
    if changed:
        how = "failed in setup" if fact.state == "setup_failed" else f"exited {fact.exit_code}"
        launch_run(
            ctx,
            None,
            first=f"the run {how} under an earlier version of the job file: launch it again with this one",
            resume=_resume_from(fact),
        )
        return
    verb = ctx.spec.teardown.on_finish
    if fact.state == "exited" and fact.exit_code == 0 and verb != "keep":
        _on_finish(ctx, _finished_why(ctx, verb))


OOM = "killed: out of memory"  # gpujob.ssh.cgroup.OOM: how a run's end says the cgroup OOM-killed it


def _after_oom(ctx: JobContext, fact: RunFact) -> None:
    """U41: the cgroup's oom_kill counter rose while the run went. Relaunched once (a spike, a leak the
    resume skips past); a second OOM kill in a row is not relaunched into the same wall again."""
    if fact.earlier_ooms < 1:
        launch_run(
            ctx,
            None,
            first=f"the run was {fact.ended}: relaunched once (a second out-of-memory kill in a row is not)",
            resume=_resume_from(fact),
        )
        return
    ctx.findings.append(
        ctx.finding(
            "run-oom",
            "warning",
            f"the run was {fact.ended}, again after its one relaunch: it is not relaunched for the same job file",
            detail="The cgroup's own oom_kill counter says so (U41), not the host's free or dmesg. A second "
            "kill in a row is the job's memory need, not a fluke.",
            fix="lower the batch size or the dataloader's num_workers × prefetch (U9), or pick a machine "
            "with more memory; then edit the job file (a new version is launched again)",
            key="run.command",
        )
    )
    m = ctx.machine
    if m is not None and m.status == "running":  # nothing runs on it now: it would only bill
        stop(ctx, m, oom_twice(fact.ended or ""))


OOM_TWICE = "out of memory twice"


def oom_twice(ended: str) -> str:
    """The stop's reason after a second OOM kill in a row, with the cgroup's limit from how it ended."""
    limit = re.search(r"\(limit ([^;)]+)", ended)
    return f"{OOM_TWICE} (limit {limit.group(1) if limit else 'unknown'}): the run is not relaunched, so the machine is stopped"


def _resume_from(fact: RunFact) -> str | None:
    if not fact.last_checkpoint:
        return None
    age = (
        f", written {_age(fact.last_checkpoint_age_s)} ago" if fact.last_checkpoint_age_s is not None else ""
    )
    return f"it resumes from the last checkpoint {fact.last_checkpoint}{age}"


def _age(seconds: float | None) -> str:
    s = int(seconds or 0)
    if s < 120:
        return f"{s}s"
    if s < 7200:
        return f"{s // 60} min"
    return f"{s / 3600:.1f} h"


def _on_finish(ctx: JobContext, reason: str) -> None:
    m = ctx.machine
    m = present(m, "the machine of a finished run")
    if ctx.spec.teardown.on_finish == "stop":
        stop(ctx, m, reason)
        return
    pull_id = (
        pull_checkpoints(ctx, ctx.teardown_verb, first=reason + ": pull and verify first")
        if ctx.spec.checkpoint is not None
        else None
    )
    terminate(
        ctx,
        m,
        [
            reason,
            f"{ctx.teardown_verb} stops the {ctx.machine_kind}'s meters for good",
            af.gate_reason(ctx, m, volume_goes=False),
        ],
        pull_id=pull_id,
    )


def _fact_findings(ctx: JobContext, fact: RunFact, changed: bool) -> None:
    if fact.state == "unknown":
        ctx.findings.append(
            ctx.finding(
                "run-status",
                "warning",
                f"run status unknown: {fact.reason}",
                detail="a lost run is not relaunched and a finished run not torn down by this plan",
                fix="plan again when the machine answers over SSH (`gpujob status` shows the run)",
            )
        )
    elif fact.state is None and fact.reason and ctx.machine is not None and ctx.machine.status == "running":
        ctx.findings.append(
            ctx.finding(
                "run-status",
                "info",
                f"run status {fact.reason}: a lost or finished run is not detected by this plan",
            )
        )
    elif changed:
        return
    elif (fact.ended or "").startswith(OOM):
        return  # _after_oom says what happens
    elif fact.state in ("exited", "setup_failed") and not (fact.exit_code == 0 and fact.state == "exited"):
        what = "failed in setup" if fact.state == "setup_failed" else f"exited with code {fact.exit_code}"
        ctx.findings.append(
            ctx.finding(
                "run-failed",
                "warning",
                f"the run {what}; it is not relaunched for the same job file",
                fix="read `gpujob logs`, fix the cause, then edit the job file (a new version is launched again)",
            )
        )
    elif fact.state == "exited" and ctx.spec.teardown.on_finish == "keep" and fact.exit_code == 0:
        ctx.findings.append(
            ctx.finding(
                "run-finished",
                "info",
                "the run exited 0; teardown.on_finish: keep leaves the machine up (and billing)",
                fix="set teardown.on_finish: stop (or state: stopped) to stop paying for an idle GPU",
                key="teardown.on_finish",
            )
        )


def noop_reason(ctx: JobContext, fact: RunFact | None) -> str | None:
    """Why nothing changes, when the run fact is the reason."""
    m = ctx.machine
    if fact is None:
        return None
    if fact.finished_for_digest:
        q = getattr(ctx.loaded, "sweep", None)
        if q is not None:
            from gpujob.layout.isolation import queue_drained

            if queue_drained(ctx.loaded):
                return (
                    f"queue q{q.n} has nothing left to run: every one of its {len(q.cells)} cells has its "
                    "record pulled, and a finished cell never runs again"
                )
        return (
            "the run finished (exit 0) with this job file: it is not started again until the job file changes"
        )
    if m is None or m.status != "running":
        return None
    if fact.state == "running":
        ck = ""
        if fact.last_checkpoint:
            ck = f"; last checkpoint {fact.last_checkpoint}"
            if fact.last_checkpoint_age_s is not None:
                ck += f", {_age(fact.last_checkpoint_age_s)} ago"
        return f"{ctx.machine_kind} {m.name} is running and matches the spec; the run is alive{ck}"
    if fact.state == "exited":
        return f"{ctx.machine_kind} {m.name} is running and matches the spec; the run exited {fact.exit_code}"
    return None
