"""`gpujob apply` of a plan with a `<job>.move`: the move runs as watch runs it (gpujob.failover.move),
and the rest of the plan through the applier."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from gpujob.plan.model import ActionKind, Plan


def split_moves(plan: Plan) -> tuple[Plan, list[str]]:
    """(the plan without the jobs that move, the names of those jobs)."""
    movers = [jp.job for jp in plan.jobs if any(a.kind is ActionKind.MOVE for a in jp.actions)]
    rest = plan.model_copy(update={"jobs": [jp for jp in plan.jobs if jp.job not in movers]})
    return rest, movers


async def apply_moves(
    movers: Sequence[str], loaded: Sequence[Any], live: Any, providers: Mapping[str, Any], *, hooks: Any,
    env: Mapping[str, str],
) -> tuple[list[str], dict[str, str]]:  # fmt: skip
    """(done move ids, failed move id -> why)."""
    from gpujob.apply.sshapi import SSHApi
    from gpujob.clock import SystemClock
    from gpujob.failover.choice import choose
    from gpujob.failover.move import move_job
    from gpujob.failover.planning import move_id, running_here

    done: list[str] = []
    failed: dict[str, str] = {}
    by_name = {ls.spec.name: ls for ls in loaded}
    for name in movers:
        ls = by_name[name]
        declared = getattr(ls, "declared", None) or ls.spec
        here_up = running_here(live, name, ls.project, ls.spec.platform)
        from gpujob.failover.failback import loaded_hold

        choice = choose(
            declared,
            getattr(ls, "entry", -1),
            live.quotes,
            running_here=here_up,
            spot_gone=live.spot_unavailable,
            failback_held=loaded_hold(ls, live.read_at),
        )
        from gpujob.failover.planning import within_cap

        choice = within_cap(ls, choice, live, now=live.read_at, env=env)  # the plan's own chooser
        mid = move_id(name)
        if choice.move_to is None:
            failed[mid] = "the platforms changed since the plan: plan again" + (
                f" ({choice.held})" if choice.held else ""
            )
            continue
        hooks.note(name, f"moving {choice.here.name} -> {choice.move_to.name}: {choice.why}")

        def note(text: str, job: str = name) -> None:
            hooks.note(job, text)

        outcome = await move_job(
            ls, choice, live, providers, ssh=SSHApi.default(), clock=SystemClock(), env=env,
            note=note, command="gpujob apply",
        )  # fmt: skip
        hooks.note(name, outcome.line())
        if outcome.ok:
            done.append(mid)
        else:
            failed[mid] = outcome.detail + _refused(ls, choice, live)
    return done, failed


def _refused(ls: Any, choice: Any, live: Any) -> str:
    """After a failback home refused: what becomes of it (gpujob.failover.failback), for the refusal."""
    if not choice.failback:
        return ""
    from gpujob.failover.failback import refused_event
    from gpujob.project.placement import read_placement
    from gpujob.state import open_store

    declared = getattr(ls, "declared", None) or ls.spec
    record = read_placement(open_store(ls.path), declared.name)
    happened, did = refused_event(declared, getattr(ls, "entry", -1), record, live.read_at)
    return f"; {happened}; {did}"
