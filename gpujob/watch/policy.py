"""What `gpujob watch` may do on its own with a job's plan. Pure: a plan and the live machine in, a
decision out.

Every action that is not gated (create, start, stop, launch, pull, grow) is a fix watch applies. A
gated one runs only when its id was approved on the command line (--approve), or in two cases the
job file itself decides:

  * teardown.on_finish: terminate, once the run exited 0: the file declares that teardown, and it
    still passes the whole gate (pull, verify, re-check) like any other;
  * replacing a machine that no longer delivers (stopped and its host has no GPU for it, RP1; up with
    zero GPUs; in ERROR; a stopped spot pod of a `spot: prefer` job once RunPod's spot API is gone, which
    nothing can start again) when the replace erases nothing durable: a RunPod pod whose only disks are
    the container disk (wiped by every stop anyway) and, if any, a network volume (kept).

Anything else gated (a replace forced by an edited job file, state: absent, a volume delete, an IP
release, anything on a platform the job does not run on) waits for a person; the decision says
exactly which command approves it. Actions that depend
on a refused one are held back with it, and so is a pull that only served it (starting a stopped pod
just to pull would bill its GPU while nobody approves the rest).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from gpujob.apply.gate import checkpoint_tier
from gpujob.jobfile.model import JobSpec
from gpujob.live import LiveResource
from gpujob.plan.capability import installed
from gpujob.plan.model import Action, ActionKind, JobPlan
from gpujob.watch.hooks import WatchHooks, held_for_people, watch_hooks

K = ActionKind


@dataclass
class Decision:
    actions: list[Action] = field(default_factory=list)  # to apply now, in plan order
    approvals: set[str] = field(default_factory=set)  # gated ids watch passes to the gate
    held: list[Action] = field(default_factory=list)  # planned but waiting for a person
    human: list[str] = field(default_factory=list)  # what a person must do, one line each
    finishing: bool = False  # the actions carry out teardown.on_finish

    @property
    def recovery(self) -> bool:
        """The actions fix drift (they count toward the recoveries-per-hour limit)."""
        return bool(self.actions) and not self.finishing


def not_delivering(machine: LiveResource | None) -> bool:
    """The job's machine cannot run the command: stopped on a host without its GPU or with a faulty one
    (the preflight's), up with zero GPUs, or in ERROR."""
    if machine is None:
        return False
    a = machine.attributes
    return bool(a.get("host_lost_gpu") or a.get("host_faulty") or a.get("zero_gpu") or a.get("error"))


def replace_keeps_data(spec: JobSpec, machine: LiveResource | None) -> bool:
    """A replace erases only what a stop erases anyway: no volume disk, checkpoints (if any) on a
    network volume. Paperspace machines keep everything on their own disk, so never there."""
    if spec.platform != "runpod" or spec.storage.volume_gb:
        return False
    if machine is not None and machine.volume_gb:
        return False
    return checkpoint_tier(spec) in (None, "network_volume")


def _spot_gone(a: Action, spec: JobSpec) -> bool:
    """The replace exists only because a `prefer` job's stopped spot pod cannot resume as spot any more
    (the planner turns spot off for it, gpujob.plan.machine_actions): the platform forced it, not an edit."""
    forcing = [c for c in a.changes if c.forces_replacement]
    return (
        spec.machine.spot == "prefer"
        and [c.path for c in forcing] == ["spot"]
        and (forcing[0].before, forcing[0].after) == (True, False)
    )


def _finishing(jp: JobPlan) -> bool:
    run = jp.run
    return run is not None and (run.finished_for_digest or (run.state == "exited" and run.exit_code == 0))


def _allowed(a: Action, jp: JobPlan, spec: JobSpec, machine: LiveResource | None, approved: set[str]) -> str:
    """'' when watch may run the gated action, else why not."""
    if a.id in approved:
        return ""
    if a.kind is K.TERMINATE and _finishing(jp) and spec.teardown.on_finish == "terminate":
        return ""
    if a.kind is K.REPLACE and (not_delivering(machine) or _spot_gone(a, spec)):
        if replace_keeps_data(spec, machine):
            return ""
        return "the replace would erase the machine's own disk, which holds data"
    return a.reasons[0] if a.reasons else "irreversible"


def decide(
    jp: JobPlan,
    spec: JobSpec,
    machine: LiveResource | None,
    *,
    approved: set[str],
    rerun: str = "gpujob watch",
    hooks: Sequence[WatchHooks] | None = None,
) -> Decision:
    """What watch may do alone for one job now. `rerun` is the watch command line as given, for the
    approval line: watch is restarted with every approval, the ones it already had included. `hooks`:
    the capabilities' (gpujob.watch.hooks; None: the installed capabilities')."""
    out = Decision(finishing=_finishing(jp))
    todo = [a for a in jp.actions if a.kind is not K.NOOP]
    left, said = held_for_people(watch_hooks(installed(), None) if hooks is None else hooks, todo)
    if left:  # e.g. what a job holds on a platform it does not run on (gpujob.failover): a person's action
        todo = [a for a in todo if a not in left]
        out.held += left
        out.human += said
    errors = [f for f in jp.findings + [f for a in jp.actions for f in a.findings] if f.severity == "error"]
    if errors:
        out.held += todo
        out.human = [
            f"the plan has an error: {f.summary}" + (f" (fix: {f.fix})" if f.fix else "") for f in errors
        ]
        return out
    refused: dict[str, str] = {}
    for a in todo:
        if a.gated:
            why = _allowed(a, jp, spec, machine, approved)
            if why:
                refused[a.id] = why
            else:
                out.approvals.add(a.id)
    held = set(refused)
    changed = True
    while changed:  # whatever depends on a held action is held too
        changed = False
        for a in todo:
            if a.id not in held and any(d in held for d in a.depends_on):
                held.add(a.id)
                changed = True
    for a in todo:  # a pull that only prepares a held action is not worth starting a machine for
        users = [b for b in todo if a.id in b.depends_on]
        if a.kind is K.PULL and users and all(b.id in held for b in users):
            held.add(a.id)
    out.actions = [a for a in todo if a.id not in held]
    out.held += [a for a in todo if a.id in held]
    out.approvals &= {a.id for a in out.actions}
    if refused:
        from gpujob.apply.gate import approve_flags

        again = f"`{rerun} {approve_flags([*sorted(approved), *refused])}`"
    for aid, why in refused.items():
        out.human.append(f"{aid} needs your approval ({why}): stop this watch and run {again}")
    run = jp.run
    relaunching = any(a.kind is K.LAUNCH for a in out.actions)
    failed = run is not None and (
        run.state == "setup_failed" or (run.state == "exited" and run.exit_code not in (0, None))
    )
    if run is not None and failed and not relaunching:
        how = "failed in setup" if run.state == "setup_failed" else f"exited with code {run.exit_code}"
        out.human.append(
            f"the run {how}; it is not restarted for the same job file: read `gpujob logs`, fix the cause, "
            "then edit the job file"
        )
    return out
