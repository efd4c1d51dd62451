"""Starting the run: the secrets it gets, the sync of the code, the detached launch."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from gpujob.apply.runtime.remote import Target, open_remote, poll_s
from gpujob.apply.runtime.transfer import transfer_reporting
from gpujob.apply.sshapi import SSHApi
from gpujob.clock import Clock
from gpujob.errors import GpujobError, SSHConnectError
from gpujob.invariant import present
from gpujob.jobfile.model import JobSpec
from gpujob.jobfile.nodes import gang_launches, is_gang, node_count
from gpujob.quote import remote_path

LAUNCH_ATTEMPTS = 3


class RunEnded(GpujobError):
    """The run this job file launched ended on its own and its machine stopped itself afterwards
    (teardown.on_finish / on_failure: stop, done by the launcher): the start that brought the machine
    back was not a request to run it again."""

    def __init__(self, spec: JobSpec, exit_code: int | None, why: str) -> None:
        super().__init__(
            f"{spec.name}: the run ended (exit {exit_code}) and its machine stopped itself: {why}"
        )
        self.run_exit = exit_code  # (GpujobError.exit_code is the CLI's)
        self.why = why


def collect_secrets(spec: JobSpec, env: Mapping[str, str], *, rerun: str = "gpujob apply") -> dict[str, str]:
    """Values of run.secrets from the local environment. Missing ones are named (never valued).
    `rerun` is the command line that repeats this one, for the hint."""
    names = spec.run.secrets if spec.run else []
    missing = [n for n in names if not env.get(n)]
    if missing:
        exports = " ".join(f"{n}=..." for n in missing)
        raise GpujobError(
            f"{spec.name}: secret(s) not set in the local environment: {', '.join(missing)}",
            hint=f"export {exports} in this shell (gpujob passes the values over SSH and never stores them), "
            f"then run: `{rerun}`",
        )
    from gpujob.config import API_KEY_ENV

    keys = {env.get(k, "").strip(): k for k in API_KEY_ENV.values() if env.get(k, "").strip()}
    for n in names:
        if env[n].strip() in keys:
            raise GpujobError(
                f"{spec.name}: the secret {n} holds the same value as {keys[env[n].strip()]}, gpujob's "
                "account key; it is not sent to the machine",
                hint="give the run a separate key with the least access it needs",
            )
    return {n: env[n] for n in names}


def sync_patterns(spec: JobSpec) -> list[str]:
    """The folders gpujob pulls into (this platform's and another's copies), then the job's excludes,
    then its deny patterns: later rules win, so no exclude negation re-includes a denied file (the SSH
    layer adds its own credential deny list after both)."""
    run = present(spec.run, "the run block of a job that launches")
    return [*pulled_patterns(spec), *aside_patterns(spec), *run.sync.exclude, *run.sync.deny]


def _pulls(spec: JobSpec) -> list[str]:
    from gpujob.layout.outputs import DEFAULT_PULL_TO

    pulls = [spec.outputs.pull_to if spec.outputs is not None else DEFAULT_PULL_TO]
    if spec.checkpoint is not None:
        pulls.insert(0, spec.checkpoint.pull_to)
    return pulls


def _literal(name: str) -> str:
    """A file name as a gitignore pattern that matches only itself."""
    import re

    return re.sub(r"^([!#])|([*?\[\]\\])", r"\\\1\2", name)


def pulled_patterns(spec: JobSpec) -> list[str]:
    """checkpoint.pull_to and outputs.pull_to themselves, when they lie inside sync.src (both are read
    from the job file's folder), anchored there: what gpujob pulled is data, and sending it back with
    the code would upload every checkpoint again at each launch. A project without `gpujob init`'s
    .gitignore had exactly that. A negation in run.sync.exclude still sends them, for whoever wants it."""
    import posixpath

    run = present(spec.run, "the run block of a job that launches")
    src = posixpath.normpath(run.sync.src)
    out = []
    for pull in _pulls(spec):
        where = posixpath.normpath(pull)
        if posixpath.isabs(where) != posixpath.isabs(src):
            continue
        rel = posixpath.relpath(where, src)
        if rel == "." or rel == ".." or rel.startswith("../"):
            continue  # the whole tree, or beside it: nothing of the code to leave out
        out.append("/" + "/".join(_literal(part) for part in rel.split("/")) + "/")
    return out


def aside_patterns(spec: JobSpec) -> list[str]:
    """`<pull_to>-from-<platform>/` of the checkpoints and outputs: what --release-left or a destroy
    pulled from a platform the job left is data, never code to send along with the next sync, wherever
    the tree has them."""
    from pathlib import PurePosixPath

    from gpujob.model import PLATFORMS
    from gpujob.naming import aside_dir

    names = [PurePosixPath(aside_dir(p, platform)).name for p in _pulls(spec) for platform in PLATFORMS]
    return [_literal(n) + "/" for n in names]


def _alive(status: Any) -> bool:
    for name in ("alive", "running", "is_alive"):
        value = getattr(status, name, None)
        if isinstance(value, bool):
            return value
    return str(getattr(status, "state", "")).lower() in ("running", "alive")


async def launch(
    target: Target,
    ssh: SSHApi,
    clock: Clock,
    env: Mapping[str, str],
    note: Callable[[str], None],
    *,
    keep_ended: bool = False,
) -> str:
    """Sync the code and start the run detached, unless it is already alive. Returns a one-line outcome.
    `keep_ended`: the run on the disk was launched from this very job file; if it ended and stopped its
    machine itself, raise RunEnded instead of running it again."""
    spec = target.spec
    if spec.run is None:
        return "no run section: nothing to launch"
    secrets = collect_secrets(spec, env)
    for attempt in range(1, LAUNCH_ATTEMPTS + 1):
        try:
            return await _launch_once(target, ssh, clock, secrets, note, keep_ended)
        except SSHConnectError as exc:
            # A dropped connection mid-sync: reconnect (the endpoint is re-read) and sync again; only
            # the files that did not arrive are sent.
            if attempt == LAUNCH_ATTEMPTS:
                raise
            note(f"connection lost ({str(exc).splitlines()[0]}); reconnecting, attempt {attempt + 1}")
            await clock.sleep(poll_s())
    raise AssertionError("unreachable")


async def _launch_once(
    target: Target,
    ssh: SSHApi,
    clock: Clock,
    secrets: dict[str, str],
    note: Callable[[str], None],
    keep_ended: bool,
) -> str:
    spec = target.spec
    run = present(spec.run, "the run block of a job that launches")

    async def sync(remote: Any) -> None:
        src = (target.spec_path.parent / run.sync.src).resolve()
        with transfer_reporting("sync", note) as progress:
            stats = await ssh.sync_tree(remote, src, run.sync.dest, sync_patterns(spec), progress=progress)
        for warning in getattr(stats, "warnings", None) or []:
            note(f"warning: {warning}")
        note(f"synced {src} -> {run.sync.dest}{_describe_stats(stats)}")
        await _carry_to_new_dir(remote, spec, ssh, note)

    if node_count(spec) > 1:
        from gpujob.apply.runtime.gang import launch_gang

        return await launch_gang(target, ssh, clock, secrets, note, sync=sync)
    # One machine: run.command itself, or (run.launcher: torchrun) torchrun around it on loopback.
    start = gang_launches(spec, [])[0] if is_gang(spec) else None
    extra: dict[str, Any] = {"command": start.command, "extra_env": start.env} if start is not None else {}
    async with open_remote(target, ssh, clock, note) as remote:
        status = await ssh.run_status(remote, spec)
        if _alive(status):
            return "run already alive: not relaunched"
        ended = getattr(status, "stopped_itself", None)
        if keep_ended and ended:
            raise RunEnded(spec, getattr(status, "exit_code", None), ended)
        await sync(remote)
        guard = onbox_guard(target)
        if guard is not None:  # the pod holds the budget itself, with nobody watching
            note(f"on the pod: {guard.budget_text or 'run.stall_after'}")
            extra["guard"] = guard
        started = await ssh.launch_run(remote, spec, secrets=secrets, **extra)
    if started is False:
        return "run already alive: not relaunched"
    return f"run launched on {target.resource.name}"


async def _carry_to_new_dir(remote: Any, spec: JobSpec, ssh: SSHApi, note: Callable[[str], None]) -> None:
    """checkpoint.dir changed since the last run on this disk: its checkpoints move to the new dir
    before the run starts (only into an empty one), so training continues from its step."""
    if spec.checkpoint is None:
        return
    old = await ssh.recorded_checkpoint_dir(remote, spec)
    if not old or old == remote_path(spec.checkpoint.dir):
        return
    moved = await ssh.move_checkpoints(remote, old, spec.checkpoint.dir)
    if moved is not None:
        note(
            f"checkpoint.dir changed: moved {len(moved.files)} checkpoint file(s) "
            f"({moved.total_bytes} B) from {old} to {spec.checkpoint.dir}, read back before removing"
        )


def onbox_guard(target: Target) -> Any:
    """What the pod holds itself (gpujob.ssh.guard): budget.max_total_usd as seconds of running left
    at its whole running rate (its GPU at the pod's own rate, its disks, the job's network volume:
    gpujob.cost.onbox), from the spend so far (watch's ledger), less a check, the quiesce grace and a
    margin; run.stall_after as it is. None when neither is set or the machine cannot stop itself."""
    from gpujob.cost.history import read_history
    from gpujob.cost.onbox import running_lines, seconds_left
    from gpujob.plan.cadence import quiesce_grace_s
    from gpujob.profile import load_profile
    from gpujob.ssh.guard import GUARD_EVERY_S, Guard, guard_of

    spec = target.spec
    grace = quiesce_grace_s(spec)
    guard = Guard(grace_s=grace)
    cap = spec.budget.max_total_usd
    if cap is not None and guard_of(spec, guard.model_copy(update={"budget_s": 0})) is not None:
        nv = spec.storage.network_volume
        lines = running_lines(
            load_profile(spec.platform),
            target.resource,
            network_volume=(nv.name, nv.size_gb, nv.tier) if nv is not None else None,
        )
        history = read_history(target.state_dir, spec.name)
        spent = history.spent_usd if history is not None else 0.0
        left = seconds_left(cap, spent, lines, reserve_s=GUARD_EVERY_S + grace + ONBOX_MARGIN_S)
        if left is not None:
            guard = guard.model_copy(update={"budget_s": left.seconds, "budget_text": left.text})
    return guard_of(spec, guard)


ONBOX_MARGIN_S = 60.0


def _describe_stats(stats: Any) -> str:
    files = getattr(stats, "files_sent", None)  # SyncStats; a fake SSH layer may return None
    return f" ({files} file(s) sent)" if isinstance(files, int) else ""
