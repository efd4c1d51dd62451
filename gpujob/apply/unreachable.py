"""A machine the gate cannot reach (no SSH endpoint, or sshd never answers): the gate refuses with the
exact risk, and the one way past it.

The risk: which disks the action erases, the last listing gpujob saw of what is on them (the pull
records), and how old the newest verified pull is. The way past: `<id>.unverified` approved together
with the plain `<id>`, honoured only after this same command failed to reach the machine (a reachable
machine is always checked). It is never printed as a flag to paste, never accepted from `gpujob
watch` or a `gpujob-approve:` line (apply_plan drops it unless the command is an interactive apply or
destroy), and --auto-approve never implies it.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

SUFFIX = ".unverified"


def override_id(action_id: str) -> str:
    return action_id + SUFFIX


def is_override(approval: str) -> bool:
    return approval.endswith(SUFFIX)


def without_overrides(approvals: set[str]) -> set[str]:
    return {a for a in approvals if not is_override(a)}


def approved_unverified(action_id: str, approvals: set[str]) -> bool:
    return action_id in approvals and override_id(action_id) in approvals


def _age(at: datetime | None, now: datetime) -> str:
    if at is None:
        return "never"
    s = max(0, int((now - at).total_seconds()))
    if s < 120:
        return f"{s}s ago"
    if s < 7200:
        return f"{s // 60} min ago"
    if s < 172800:
        return f"{s // 3600} h ago"
    return f"{s // 86400} days ago"


def _bytes(n: int) -> str:
    from gpujob.plan.checkpoint_actions import human_bytes

    return human_bytes(n)


def risk(
    *,
    erases: str,
    pull_record: Any,
    outputs_record: Any,
    now: datetime,
) -> str:
    """One sentence: what the action erases, the last listing gpujob saw, the newest verified pull."""
    seen: list[str] = []
    newest: datetime | None = None
    if pull_record is not None:
        n = len(pull_record.remote_files)
        size = sum(f.size for f in pull_record.files)
        verified = [f for f in pull_record.files if f.verified]
        seen.append(
            f"{n} checkpoint file(s) in {pull_record.remote_dir} ({_bytes(size)} pulled), listed "
            f"{_age(pull_record.at, now)}"
        )
        if verified:
            newest = pull_record.at
    if outputs_record is not None:
        seen.append(
            f"{len(outputs_record.files)} output file(s) ({_bytes(outputs_record.total_bytes)}), listed "
            f"{_age(outputs_record.at, now)}"
        )
        if outputs_record.files:
            newest = max(newest, outputs_record.at) if newest is not None else outputs_record.at
    listing = "; ".join(seen) if seen else "none (gpujob never listed or pulled anything from it)"
    return (
        f"the action erases {erases}; the last listing gpujob saw: {listing}; the newest verified pull: "
        f"{_age(newest, now)}"
    )


def hint(action_id: str) -> str:
    # Words, not a command line: accepting the loss must be typed on purpose.
    return (
        "make the machine reachable (check it in the platform console: its SSH port and that its image "
        "starts sshd, RP10) and run the command again; to destroy it without looking, accepting that "
        "whatever is on those disks is lost, approve this action a second time with the suffix "
        f"'{SUFFIX}' next to its plain approval of {action_id} (accepted only after this same command "
        "failed to reach it; never from gpujob watch or a PR approval line)"
    )


def mark_plan(plan: Any, approvals: set[str]) -> Any:
    """The plan as shown before an apply given an override: each action it covers says, in its data
    line, that an unreachable machine will be destroyed unchecked."""
    if not any(is_override(a) for a in approvals):
        return plan
    jobs = []
    for jp in plan.jobs:
        actions = []
        for a in jp.actions:
            if a.gated and approved_unverified(a.id, approvals):
                note = (
                    f"; DATA LOSS if unreachable: {override_id(a.id)} is approved, so a machine this command "
                    "cannot reach is destroyed without a look or a pull"
                )
                a = a.model_copy(
                    update={"data": a.data.model_copy(update={"summary": a.data.summary + note})}
                )
            actions.append(a)
        jobs.append(jp.model_copy(update={"actions": actions}))
    return plan.model_copy(update={"jobs": jobs})
