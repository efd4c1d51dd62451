"""`<job>.move`: run the job on another platform, carrying its newest locally verified checkpoint.

    1. the old machine, when running, is stopped (planned and applied as a stop, as watch parks a job);
       nothing of the job is deleted: its storage there is kept
    2. where the job runs is recorded (failover/<job>.json) before anything is created
    3. the machine is created on the new platform (the create steps of its plan, bounded in time)
    4. the newest checkpoint verified here (by checkpoint.verify and by sha256, read again now) is pushed
       into checkpoint.dir there and read back: the move stops unless the bytes match
    5. the run is launched there (its plan's launch); it resumes from that checkpoint

A move that fails before its run is launched puts the record back where the job's data is (the old
platform), so the job is parked there, not lost: its checkpoints are on its kept storage and here.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from gpujob.apply.progress import NullHooks
from gpujob.clock import Clock
from gpujob.errors import GpujobError
from gpujob.failover.choice import Choice, Place
from gpujob.invariant import present
from gpujob.plan.model import ActionKind
from gpujob.project.placement import Move, Placement, placed_spec, read_placement, write_placement

K = ActionKind
CREATE_WAIT_S = 240.0  # how long the new platform may refuse capacity before the move gives up
ENV_CREATE_WAIT = "GPUJOB_FAILOVER_CREATE_WAIT"  # seconds, overriding CREATE_WAIT_S


def create_wait_s(env: Mapping[str, str]) -> float:
    try:
        return float(env.get(ENV_CREATE_WAIT, "") or CREATE_WAIT_S)
    except ValueError:
        return CREATE_WAIT_S


@dataclass
class MoveOutcome:
    ok: bool
    detail: str
    from_name: str
    to_name: str
    why: str
    checkpoint: str | None = None
    step: int | None = None
    pushed_bytes: int = 0

    def line(self) -> str:
        ck = f"{self.checkpoint} (step {self.step})" if self.checkpoint else "no checkpoint"
        return f"{self.from_name} -> {self.to_name} ({self.why}); carried {ck}: {self.detail}"


class _Hooks(NullHooks):
    """The move's apply reports its notes through watch's and keeps the failed steps for its outcome."""

    def __init__(self, note: Callable[[str], None]) -> None:
        self._note = note
        self.failed: list[str] = []

    def step(self, action: Any, phase: str, detail: str = "") -> None:
        if phase == "failed":
            self.failed.append(f"{action.id}: {detail}")

    def note(self, job: str, message: str) -> None:
        self._note(message)


def carried_file(ls: Any) -> tuple[str | None, int | None, int]:
    """(name, step, size) of the newest checkpoint whose local copy is verified and still the bytes the
    pull checked; (None, None, 0) when there is none."""
    from gpujob.apply.localfiles import local_sha256
    from gpujob.apply.runtime import pull_dir
    from gpujob.plan.records import load_pull_record, step_of
    from gpujob.state import open_store

    spec = ls.spec
    if spec.checkpoint is None:
        return None, None, 0
    if getattr(ls, "sweep", None) is not None:  # a queue: its cell in flight's (gpujob.failover.queue_carry)
        from gpujob.failover.queue_carry import queue_carry

        carry = queue_carry(ls)
        flight = carry.in_flight() if carry is not None else None
        return (flight[1], flight[2], 0) if flight else (None, None, 0)
    record = load_pull_record(open_store(ls.path), spec.name)
    if record is None:
        return None, None, 0
    local = pull_dir(spec, ls.path)
    ok = [f for f in record.files if f.verified and f.checksum_ok]
    ok.sort(key=lambda f: (step_of(f.name) is not None, step_of(f.name) or 0, f.at), reverse=True)
    for f in ok:
        if local_sha256(local / f.name) == f.sha256:
            return f.name, step_of(f.name), f.size
    return None, None, 0


async def _apply(
    plan: Any, ls: Any, providers: Mapping[str, Any], *, keep: Callable[[Any], bool], ssh: Any, clock: Clock,
    env: Mapping[str, str], note: Callable[[str], None], command: str,
) -> None:  # fmt: skip
    from gpujob.apply.applier import apply_plan

    jp = plan.jobs[0]
    todo = [a for a in jp.actions if a.kind not in (K.NOOP, K.MOVE) and not a.gated and keep(a)]
    if not todo:
        return
    sub = plan.model_copy(update={"jobs": [jp.model_copy(update={"actions": todo})]})
    hooks = _Hooks(note)
    result = await apply_plan(
        sub, [ls], providers, approvals=set(), auto_approve=True, hooks=hooks, clock=clock, env=env, ssh=ssh,
        command=command,
    )  # fmt: skip
    if result.failed:
        raise GpujobError("; ".join(f"{k}: {v}" for k, v in result.failed.items()))


async def _plan(
    ls: Any, providers: Mapping[str, Any], clock: Clock, env: Mapping[str, str], *, runs: bool
) -> Any:
    from gpujob.apply.refresh import read_live_state
    from gpujob.plan.planner import build_plan
    from gpujob.plan.records import job_launch_records, job_pull_records

    live = await read_live_state([ls.spec], providers, now=clock.now(), runs_for=[ls] if runs else None)
    plan = build_plan(
        [ls], live, now=clock.now(), env=env, pull_records=job_pull_records([ls]),
        launch_records=job_launch_records([ls]),
    )  # fmt: skip
    return plan, live


async def push_verified(
    target_ls: Any,
    machine: Any,
    provider: Any,
    name: str,
    *,
    ssh: Any,
    clock: Clock,
    note: Callable[[str], None],
) -> int:
    """Push one verified local checkpoint into checkpoint.dir on `machine` and read it back: its sha256
    there must be the one verified here. Returns the bytes pushed."""
    from gpujob.apply.localfiles import local_sha256
    from gpujob.apply.runtime import Target, open_remote, pull_dir
    from gpujob.state import open_store

    spec = target_ls.spec
    present(spec.checkpoint, "a moving job's checkpoint block")
    local = pull_dir(spec, target_ls.path)
    want = local_sha256(local / name)
    target = Target(
        spec=spec, spec_path=target_ls.path, provider=provider, resource=machine,
        state_dir=open_store(target_ls.path), moved=True,
    )  # fmt: skip
    async with open_remote(target, ssh, clock, note) as remote:
        sent = await ssh.push_checkpoints(remote, local, [name], spec.checkpoint.dir)
        landed = await ssh.list_checkpoints(remote, spec.checkpoint.dir)
    got = landed.files.get(name)
    if got is None or got.sha256 != want:
        raise GpujobError(
            f"the pushed checkpoint {name} reads back differently on {machine.name}",
            hint="the move stopped before launching the run; the next move pushes it again",
        )
    return int(sent or 0)


async def push_records(
    target_ls: Any, machine: Any, provider: Any, carry: Any, *, ssh: Any, clock: Clock,
    note: Callable[[str], None],
) -> None:  # fmt: skip
    """A moving queue's never-run-again records written into its wrapper's state dir there, and read
    back: the move stops before the launch unless every finished cell is recorded there."""
    from gpujob.apply.runtime import Target, open_remote
    from gpujob.failover.queue_carry import records_command
    from gpujob.state import open_store

    spec = target_ls.spec
    job = target_ls.sweep.sweep_job
    target = Target(
        spec=spec, spec_path=target_ls.path, provider=provider, resource=machine,
        state_dir=open_store(target_ls.path), moved=True,
    )  # fmt: skip
    async with open_remote(target, ssh, clock, note) as remote:
        got = await remote.run(
            records_command(spec.storage.mount, job, carry),
            what=f"writing the records of {len(carry.finished)} finished cell(s) of {spec.name}",
        )
    there = set(str(got.stdout).split())
    missing = sorted(set(carry.finished) - there)
    if missing:
        raise GpujobError(
            f"the finished cells' records read back incomplete on {machine.name}: {', '.join(missing)}",
            hint="the move stopped before launching the run; the next move writes them again",
        )


async def _quiesce_and_pull(
    ls: Any, machine: Any, provider: Any, *, ssh: Any, clock: Clock, note: Callable[[str], None]
) -> None:
    """Before the old machine stops: stop the run as a platform stop would (its last save lands), then
    one final pull, so the move carries the newest checkpoint there is."""
    from types import SimpleNamespace

    from gpujob.apply.runtime import Target
    from gpujob.apply.runtime import pull as final_pull
    from gpujob.state import open_store
    from gpujob.watch.apply import quiesce

    store = open_store(ls.path)
    said = await quiesce(SimpleNamespace(loaded=ls, state_dir=store), machine, provider, ssh=ssh, clock=clock)
    note(f"before the move: {said}")
    ck = ls.spec.checkpoint
    if ck is None or ck.pull == "never":
        return
    target = Target(spec=ls.spec, spec_path=ls.path, provider=provider, resource=machine, state_dir=store)
    try:
        await final_pull(target, ssh, clock, note)
    except GpujobError as exc:
        note(
            f"the final pull failed ({str(exc).splitlines()[0]}); the move carries the newest verified before it"
        )


async def _stop_what_it_started(
    there: Any, platform: str, providers: Mapping[str, Any], before: list[str], *, ssh: Any, clock: Clock,
    note: Callable[[str], None],
) -> None:  # fmt: skip
    """A failed move leaves nothing billing by the hour where it failed: what it created or started
    there and left running or starting is stopped (gpujob.failover.failback.stop_half_started)."""
    from gpujob.apply.quiesce import stop
    from gpujob.apply.refresh import read_live_state
    from gpujob.apply.runtime import Target
    from gpujob.failover.failback import stop_half_started
    from gpujob.state import open_store

    async def stop_one(machine: Any) -> None:
        target = Target(spec=there.spec, spec_path=there.path, provider=providers[platform], resource=machine,
                        state_dir=open_store(there.path), moved=True)  # fmt: skip
        await stop(target, ssh, clock, note, before="stop after a failed move")

    try:
        live = await read_live_state([there.spec], providers, now=clock.now())
        await stop_half_started(live, there.spec.name, there.project, platform, before, stop_one, note)
    except Exception as exc:  # said: what the move started there may still bill
        note(f"could not check {platform} for a machine the failed move started: {str(exc).splitlines()[0]}")


async def move_job(
    ls: Any,
    choice: Choice,
    live: Any,
    providers: Mapping[str, Any],
    *,
    ssh: Any,
    clock: Clock,
    env: Mapping[str, str],
    note: Callable[[str], None] = lambda _t: None,
    command: str = "gpujob watch",
    create_wait: float | None = None,
) -> MoveOutcome:
    """Move the job (loaded as it runs now: ls.declared, ls.entry) to choice.move_to."""
    from gpujob.state import open_store

    wait_s = create_wait_s(env) if create_wait is None else create_wait
    to: Place | None = choice.move_to
    to = present(to, "the move's target")
    declared = getattr(ls, "declared", None) or ls.spec
    here = choice.here
    store = open_store(ls.path)
    name, step, _size = carried_file(ls)
    out = MoveOutcome(False, "", here.name, to.name, choice.why, name, step)

    # 1. the old machine: stopped if it runs (its storage is kept, nothing is deleted)
    from gpujob.failover.failback import alive_ids
    from gpujob.failover.planning import left_behind

    billing_there = alive_ids(live, declared.name, ls.project, to.platform)  # what a failure leaves running

    old = [
        r for r in left_behind(live, ls.spec.name, ls.project, here.platform) if r.kind in ("pod", "machine")
    ]
    running = next((r for r in old if r.status == "running"), None)
    if running is not None:
        await _quiesce_and_pull(ls, running, providers[here.platform], ssh=ssh, clock=clock, note=note)
    if any(r.status in ("running", "pending") for r in old):
        from gpujob.watch.apply import park

        ok, why = await park(ls, "stop", live, providers, ssh=ssh, clock=clock, env=env)
        if not ok:
            out.detail = f"the old machine could not be stopped ({why}); nothing was moved"
            return out
        name, step, _size = carried_file(ls)  # the stop's final pull may have brought a newer one
        out.checkpoint, out.step = name, step

    # 2. where the job runs, recorded first
    before = read_placement(store, declared.name) or Placement(
        job=declared.name, entry=-1, platform=declared.platform, since=clock.now()
    )
    move = Move(
        at=clock.now(), from_entry=here.entry, to_entry=to.entry, from_platform=here.platform,  # type: ignore[arg-type]
        to_platform=to.platform, why=choice.why, checkpoint=name, step=step,  # type: ignore[arg-type]
    )  # fmt: skip
    write_placement(store, before.model_copy(update={"entry": to.entry, "platform": to.platform,
                                                     "since": clock.now(), "moves": [*before.moves, move]}))  # fmt: skip
    there = dataclasses.replace(ls, spec=placed_spec(declared, to.entry), entry=to.entry, declared=declared)

    def finish(outcome: str, entry: int, platform: str) -> None:
        rec = read_placement(store, declared.name)
        rec = present(rec, "the placement record the move wrote")
        moves = [*rec.moves[:-1], rec.moves[-1].model_copy(update={"outcome": outcome})]
        write_placement(store, rec.model_copy(update={"entry": entry, "platform": platform, "moves": moves}))

    try:
        # 3. create there (its plan's create steps; the launch waits for the checkpoint). Not the plan's
        # own seed of a fresh disk (gpujob.plan.seed): step 4 carries the checkpoint, pushed once.
        plan, _ = await _plan(there, providers, clock, env, runs=False)
        kinds = {a.kind for a in plan.jobs[0].actions if a.resource_kind in ("pod", "machine")}
        made = "created" if K.CREATE in kinds else "started" if K.START in kinds else "found running"
        await asyncio.wait_for(
            _apply(plan, there, providers, keep=lambda a: a.kind not in (K.LAUNCH, K.PUSH), ssh=ssh, clock=clock,
                   env=env, note=note, command=command),
            timeout=wait_s,
        )  # fmt: skip
        # 4. the checkpoint, pushed and read back
        plan, live2 = await _plan(there, providers, clock, env, runs=False)
        from gpujob import naming

        kind = "pod" if to.platform == "runpod" else "machine"
        machine = next(
            (r for r in naming.machines(naming.owned(live2.resources, declared.name, ls.project), declared.name,
                                        ls.project) if r.kind == kind and r.platform == to.platform),
            None,
        )  # fmt: skip
        if machine is None:
            raise GpujobError(f"no {kind} of the job on {to.platform} after its create")
        from gpujob.failover.queue_carry import queue_carry

        carry = queue_carry(ls)
        if carry is not None:  # a sweep queue: every cell's checkpoint, then its records (queue_carry)
            for one in carry.files():
                out.pushed_bytes += await push_verified(
                    there, machine, providers[to.platform], one, ssh=ssh, clock=clock, note=note
                )
            await push_records(there, machine, providers[to.platform], carry, ssh=ssh, clock=clock, note=note)
        elif name is not None:
            out.pushed_bytes = await push_verified(
                there, machine, providers[to.platform], name, ssh=ssh, clock=clock, note=note
            )
        # 5. launch: the plan of the job there now, with its run facts, launches it
        plan, _ = await _plan(there, providers, clock, env, runs=True)
        await _apply(plan, there, providers, keep=lambda a: True, ssh=ssh, clock=clock, env=env, note=note,
                     command=command)  # fmt: skip
    except (GpujobError, TimeoutError) as exc:
        why = (
            str(exc).splitlines()[0]
            if str(exc)
            else f"{to.platform} did not provide a machine in {wait_s:.0f} s"
        )
        await _stop_what_it_started(
            there, to.platform, providers, billing_there, ssh=ssh, clock=clock, note=note
        )
        finish(f"failed: {why}", here.entry, here.platform)
        out.detail = (
            f"move failed: {why}; the job stays parked on {here.name} (its storage and checkpoints kept)"
        )
        return out
    finish("done", to.entry, to.platform)
    out.ok = True
    carried = (
        f"pushed {name} ({out.pushed_bytes} bytes) and read it back" if name else "no checkpoint to carry"
    )
    out.detail = f"{made} on {to.platform}, {carried}, run launched"
    return out
