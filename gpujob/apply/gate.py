"""The teardown gate: what it requires, as pure checks. teardown.py runs it against the machine.

A gated action (terminate, replace, delete a volume, release a static IP, delete a snapshot) runs only
when its exact id was approved (--approve ID, or typed at the prompt; --auto-approve never is one) and,
when it erases a disk that holds checkpoint files, only when every file the remote lists there right
before the call has a local copy in checkpoint.pull_to with the same size and sha256 that passed
checkpoint.verify. The pull record is evidence of what was pulled; the remote listing is the truth.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from gpujob.apply.localfiles import local_sha256
from gpujob.errors import GateError
from gpujob.jobfile.model import JobSpec
from gpujob.plan.model import Action
from gpujob.plan.records import PullRecord, load_pull_record, load_pull_records

__all__ = [
    "PullRecord",
    "approve_flags",
    "checkpoint_tier",
    "load_pull_record",
    "load_pull_records",
    "require_approvals",
    "require_approved",
    "unsafe_files",
]


def checkpoint_tier(spec: JobSpec) -> str | None:
    """The storage tier the job file puts checkpoint.dir on, or None when it has no checkpoint block.
    (What the spec says; the gate itself looks at the disk.)"""
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


def approve_flags(ids: Iterable[str]) -> str:
    """`--approve ID` for each id, once each, in order."""
    return " ".join(f"--approve {i}" for i in dict.fromkeys(ids))


def require_approvals(
    actions: Iterable[Action], approvals: set[str], *, command: str = "gpujob apply"
) -> None:
    """Refuse up front, before any step runs, when a gated action lacks its explicit approval.

    `command` is the command line that repeats this one (gpujob.cli.session.rerun_command). Approvals
    are not remembered between runs, so the hint approves every gated action, the ones given included."""
    gated = [a.id for a in actions if a.gated]
    missing = [i for i in gated if i not in approvals]
    if missing:
        raise GateError(
            f"{len(missing)} irreversible action(s) need explicit approval: {', '.join(missing)} "
            "(--auto-approve never approves these)",
            hint=f"review the plan, then run: `{command} {approve_flags(gated)}`",
        )


def require_approved(
    action: Action, approvals: set[str], *, command: str = "gpujob apply", gated: Iterable[str] = ()
) -> None:
    """Checked first at run time: nothing (not even stopping the run) happens for an unapproved action.
    `gated` are the other ids the re-run must approve again (approvals are not remembered)."""
    if action.id not in approvals:
        raise GateError(
            f"{action.id}: not approved; irreversible actions need their exact id approved "
            "(--auto-approve never approves them)",
            hint=f"run: `{command} {approve_flags([*gated, action.id, *sorted(_plain(approvals))])}`",
        )


def _plain(approvals: set[str]) -> set[str]:
    """Approvals a hint may repeat: never the unverified override (gpujob.apply.unreachable)."""
    from gpujob.apply.unreachable import without_overrides

    return without_overrides(approvals)


def unsafe_files(remote: Mapping[str, Any], record: PullRecord | None, local_dir: Path) -> list[str]:
    """Every remote file (name -> object with .size and .sha256) without a verified local twin, each
    with the reason. The local copy is read again: it must be a regular file under local_dir (no
    symlink in its last part) with the remote's size and sha256, and the record must say that very
    copy passed checkpoint.verify."""
    out = []
    for name, want in sorted(remote.items()):
        got = record.file(name) if record is not None else None
        if got is None:
            out.append(f"{name!r} (not pulled)")
            continue
        if got.sha256 != want.sha256 or got.size != want.size:
            out.append(f"{name!r} (the remote copy changed after the pull)")
            continue
        if not got.verified:
            out.append(f"{name!r} (failed checkpoint.verify)")
            continue
        if local_sha256(local_dir / name) != want.sha256:
            out.append(f"{name!r} (the local copy in {local_dir} is missing or differs)")
    return out
