"""The teardown gate. A gated action (terminate, replace, delete volume, release a static IP, delete a
snapshot) runs only when:

  1. every checkpoint on the storage tier it destroys was pulled to checkpoint.pull_to,
  2. each pulled file passed checkpoint.verify and its checksum matched the remote copy,
  3. the user approved that exact action id (--approve ID, or typing the id at the prompt).

--auto-approve never satisfies (3): approvals are explicit ids only. Tier-awareness: a checkpoint dir
on a RunPod network volume survives pod terminate, so terminating the pod needs only the approval,
while deleting the volume needs the pull as well.
"""

from __future__ import annotations

from collections.abc import Iterable

from gpujob.apply.records import PullRecord, load_pull_record, load_pull_records
from gpujob.errors import GateError
from gpujob.plan.model import Action, ActionKind
from gpujob.spec.model import JobSpec

__all__ = [
    "PullRecord",
    "check_gate",
    "checkpoint_tier",
    "load_pull_record",
    "load_pull_records",
    "require_approvals",
]

# What each gated verb erases. A machine's own disks go with it; only a network volume outlives it.
_MACHINE_TIERS = frozenset({"container_disk", "volume_disk", "block_storage"})


def checkpoint_tier(spec: JobSpec) -> str | None:
    """The storage tier holding checkpoint.dir, or None when the job has no checkpoints."""
    ck = spec.checkpoint
    if ck is None:
        return None
    mount = spec.storage.mount.rstrip("/") or "/"
    on_mount = ck.dir == mount or ck.dir.startswith(mount + "/")
    if spec.platform == "paperspace":
        return "block_storage"  # a Core machine's disk; destroy erases all of it
    if on_mount and spec.storage.network_volume is not None:
        return "network_volume"
    return "volume_disk" if on_mount else "container_disk"


def destroyed_tiers(action: Action) -> frozenset[str]:
    if action.kind in (ActionKind.TERMINATE, ActionKind.REPLACE):
        return _MACHINE_TIERS
    if action.kind is ActionKind.DELETE_VOLUME:
        return frozenset({"network_volume"})
    return frozenset()


def require_approvals(
    actions: Iterable[Action], approvals: set[str], *, command: str = "gpujob apply"
) -> None:
    """Refuse up front, before any step runs, when a gated action lacks its explicit approval."""
    missing = [a.id for a in actions if a.gated and a.id not in approvals]
    if missing:
        flags = " ".join(f"--approve {m}" for m in missing)
        raise GateError(
            f"{len(missing)} irreversible action(s) need explicit approval: {', '.join(missing)} "
            "(--auto-approve never approves these)",
            hint=f"review the plan, then: {command} {flags}",
        )


def check_gate(
    action: Action,
    spec: JobSpec,
    record: PullRecord | None,
    approvals: set[str],
    *,
    pull_command: str = "gpujob pull",
) -> None:
    """Raise GateError naming the first unmet condition and what to run next; return when all hold."""
    if not action.gated:
        return
    tier = checkpoint_tier(spec)
    if tier is not None and tier in destroyed_tiers(action):
        _check_checkpoints(action, spec, tier, record, pull_command)
    if action.id not in approvals:
        raise GateError(
            f"{action.id}: not approved; irreversible actions need their exact id approved "
            "(--auto-approve never approves them)",
            hint=f"gpujob apply --approve {action.id}",
        )


def _check_checkpoints(
    action: Action, spec: JobSpec, tier: str, record: PullRecord | None, pull_command: str
) -> None:
    ck = spec.checkpoint
    assert ck is not None
    where = f"{ck.dir} ({tier.replace('_', ' ')} of {action.resource_name})"
    if ck.verify is None:
        raise GateError(
            f"{action.id}: would erase checkpoints in {where}, and checkpoint.verify is not set, "
            "so no pulled copy can be verified",
            hint="set checkpoint.verify in the job file (e.g. python verify_ckpt.py {file}), then pull",
        )
    if record is None or not _same_source(action, tier, record):
        raise GateError(
            f"{action.id}: would erase checkpoints in {where} that were never pulled",
            hint=f"{pull_command}  (fetches, checksums and verifies them into {ck.pull_to})",
        )
    missing = record.missing()
    if missing:
        raise GateError(
            f"{action.id}: {len(missing)} checkpoint file(s) in {where} not pulled or checksum mismatch: "
            + ", ".join(missing[:5]),
            hint=f"{pull_command}  (resumes and re-checks them)",
        )
    bad = record.unverified()
    if bad:
        raise GateError(
            f"{action.id}: pulled checkpoint(s) failed `{ck.verify}`: " + ", ".join(bad[:5]),
            hint="inspect the local copies in " + ck.pull_to + f", fix the cause, then {pull_command}",
        )


def _same_source(action: Action, tier: str, record: PullRecord) -> bool:
    """A record counts only for the resource it was pulled from (a replaced pod is a different disk)."""
    if action.resource_id is None:
        return True
    if tier == "network_volume":
        return record.network_volume_id == action.resource_id
    return record.resource_id == action.resource_id
