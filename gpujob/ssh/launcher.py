"""Start the training command detached on the machine (tmux, else nohup) and read its status.

The launcher script is rendered from templates/launcher.sh.j2 and stored on the durable mount next to
the run's log and exit code (<mount>/.gpujob/<job>/); the once-per-container setup marker lives on the
container disk (a stop wipes it). Secret values go over the SSH channel's stdin into a FIFO the run
reads once: never into a file, argv, or the log."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Literal

from pydantic import Field

from gpujob.errors import RemoteCommandError
from gpujob.jobfile.model import JobSpec
from gpujob.layout.machine import (
    SCRATCH_ROOT,
    job_dir,
    run_env,
    run_section,
    scratch_dir,
)
from gpujob.model import Model
from gpujob.naming import SEP, machine_kind_of, run_session
from gpujob.quote import env_name, q, remote_path, session_name
from gpujob.ssh import cgroup
from gpujob.ssh.guard import GUARD_EVERY_S as GUARD_EVERY_S
from gpujob.ssh.guard import SELF_STOP as SELF_STOP
from gpujob.ssh.guard import Guard, guard_of
from gpujob.ssh.logread import STATUS_CAP, expand, tail_command
from gpujob.ssh.session import Remote

LOG_TAIL_LINES = 50


class Progress(Model):
    """A step the run reported in $GPUJOB_PROGRESS_FILE, and how long ago (remote clock) it was written."""

    step: int
    age_s: float


class PastRun(Model):
    """An earlier run as the launcher recorded it when the next one started."""

    started_at: str
    first: Progress | None
    last: Progress | None
    exit_code: int | None


class RunStatus(Model):
    alive: bool
    exit_code: int | None
    started_at: str | None
    last_checkpoint: str | None
    last_checkpoint_age_s: float | None
    log_tail: str  # the machine's text as read (cut lines marked): show it through redact.from_machine
    finished_at: str | None = None
    setup_failed: bool = False
    detach: str | None = None  # tmux or nohup, as actually used
    checkpoint_dir: str | None = None  # where the last run launched on this disk writes (its marker)
    stopped_itself: str | None = (
        None  # why the launcher stopped the machine as the run ended (on_finish/on_failure)
    )
    progress: Progress | None = None  # the newest step of this run
    progress_first: Progress | None = None  # the first step of this run (its resume point + 1)
    history: list[PastRun] = Field(
        default_factory=list
    )  # earlier runs, oldest first (the launcher's $JOBDIR/runs)
    memory_limit: int | None = None  # the cgroup's memory limit, bytes (gpujob.ssh.cgroup)
    oom_kills: int | None = None  # how far the cgroup's oom_kill counter rose since this run started
    earlier_ooms: int = 0  # consecutive OOM-killed runs before this one
    rebooted: bool = False  # the boot id changed since this run started
    gpu_util: int | None = None  # the busiest GPU's utilisation, %, where nvidia-smi answers one

    @property
    def ended(self) -> str | None:
        """What ended the run, from inside the machine (U3): out of memory, a reboot, a signal."""
        return cgroup.ended_how(
            alive=self.alive, exit_code=self.exit_code, started=bool(self.started_at),
            oom_kills=self.oom_kills, memory_limit=self.memory_limit, rebooted=self.rebooted,
        )  # fmt: skip

    @property
    def state(self) -> Literal["running", "exited", "setup_failed", "lost", "not_started"]:
        """lost: started, not alive, no exit code (the machine stopped or was preempted under it)."""
        if self.alive:
            return "running"
        if self.setup_failed:
            return "setup_failed"
        if self.exit_code is not None:
            return "exited"
        return "lost" if self.started_at else "not_started"


# Whether "$pid" is this job's run: the pid file lives on the durable mount and outlives the container,
# and a new container numbers its processes from 1 again, so the pid may now be anything, even the very
# `launcher.sh start` asking (its argv also holds "$SELF"). Only the run's own process has "$SELF run".
IS_RUN = r"""tr '\0' '\n' < "/proc/$pid/cmdline" 2>/dev/null | grep -A1 -xF -- "$SELF" | grep -qx run"""


def render_launcher(
    spec: JobSpec,
    *,
    scratch_root: str = SCRATCH_ROOT,
    guard: Guard | None = None,
    command: str | None = None,
    extra_env: Sequence[tuple[str, str]] = (),
) -> str:
    """`command` / `extra_env`: one node's start of a multi-node job (gpujob.jobfile.nodes), in place of
    run.command and after the run's own environment."""
    import jinja2

    run = run_section(spec)
    held = guard_of(spec, guard)
    env = run_env(spec) + [(env_name(k), v) for k, v in extra_env]
    mkdirs = [v for k, v in env if k in ("HF_HOME", "PIP_CACHE_DIR", "GPUJOB_CHECKPOINT_DIR")]
    tpl_env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(Path(__file__).parent / "templates")),
        undefined=jinja2.StrictUndefined,
        autoescape=False,
        keep_trailing_newline=True,
    )
    tpl_env.filters["q"] = q
    return tpl_env.get_template("launcher.sh.j2").render(
        is_run=IS_RUN,
        job=spec.name,
        jobdir=job_dir(spec),
        scratch=scratch_dir(spec, scratch_root),
        dest=remote_path(run.sync.dest),
        session=session_name(run_session(spec.name)),
        detach=run.detach,
        env=env,
        mkdirs=mkdirs,
        setup=run.setup or "",
        command=run.command if command is None else command,
        ckdir=remote_path(spec.checkpoint.dir) if spec.checkpoint else "",
        # A sweep queue's machine is stopped by gpujob, not by itself: the cells' results are pulled
        # first (docs/sweeps.md), which an on-box stop would leave on the stopped disk.
        stop_on_finish=spec.teardown.on_finish == "stop"
        and spec.platform in SELF_STOP
        and SEP not in spec.name,
        stop_on_failure=spec.teardown.on_failure == "stop" and spec.platform in SELF_STOP,
        kind=machine_kind_of(spec.platform, spec.machine.nodes),
        self_stop=SELF_STOP.get(spec.platform, ""),
        guard=held,
        cgroup=cgroup.FUNCTIONS.rstrip(),
        threads=[n for n in cgroup.THREAD_VARS if n not in run.env],
        unbuffered="PYTHONUNBUFFERED" not in run.env,
    )


def _secret_blob(spec: JobSpec, secrets: dict[str, str]) -> bytes:
    names = run_section(spec).secrets
    missing = [n for n in names if n not in secrets]
    if missing:
        from gpujob.errors import ConfigError

        raise ConfigError(
            f"job {spec.name}: secret environment variable(s) not set: {', '.join(missing)}",
            hint="export them in the shell that runs gpujob (only their names are in job.yaml)",
        )
    parts = []
    for name in names:
        value = secrets[name]
        if "\0" in value:
            raise ValueError(f"secret {name} contains a NUL byte, which no environment can hold")
        parts += [env_name(name).encode(), value.encode()]
    return b"".join(p + b"\0" for p in parts)


async def launch_run(
    remote: Remote,
    spec: JobSpec,
    *,
    secrets: dict[str, str],
    scratch_root: str = SCRATCH_ROOT,
    guard: Guard | None = None,
    command: str | None = None,
    extra_env: Sequence[tuple[str, str]] = (),
) -> bool:
    """Start the run detached unless it is already alive (idempotent); True when it was started.
    Only the names in `spec.run.secrets` are sent, over this SSH channel's stdin. `guard`: the limits
    the pod holds itself (budget, stall), with the quiesce it runs first (quiesce.sh beside the launcher).
    `command` and `extra_env`: one node's start of a multi-node job (render_launcher)."""
    blob = _secret_blob(spec, secrets)
    jobdir = job_dir(spec)
    held = guard_of(spec, guard)
    if held is not None:
        await remote.put_bytes(_quiesce_command(spec, held.grace_s).encode(), f"{jobdir}/quiesce.sh", 0o700)
    script = render_launcher(
        spec, scratch_root=scratch_root, guard=guard, command=command, extra_env=extra_env
    )
    await remote.put_bytes(script.encode(), f"{jobdir}/launcher.sh", 0o700)
    try:
        # Silent while it may install tmux (up to 6 min of apt): idle and overall bounds are the same,
        # twice a command's (10 min by default).
        bound = 2 * remote.limits.command_s
        res = await remote.run(
            f"bash {q(jobdir + '/launcher.sh')} start",
            input=blob,
            timeout=bound,
            idle=bound,
            what=f"starting the run of {spec.name}",
            left="the run may or may not have started; the next apply checks and starts it only if it is not alive",
        )
    except RemoteCommandError as exc:
        # Keep the command in the message, never the input; stderr comes from the launcher only.
        raise RemoteCommandError(f"start run of {spec.name}", exc.exit_status, exc.stderr_tail) from None
    return "gpujob: started" in res.stdout


def newest_checkpoint(spec: JobSpec) -> str:
    """A shell pipeline, run in checkpoint.dir: '<mtime> <path>' of the newest checkpoint file. A sweep
    queue looks only in its own cells' dirs: on a network volume every queue's cells share the dir,
    and another queue's newest checkpoint would pass for this queue's progress."""
    from gpujob.jobfile.cells import queue_cells

    cells = queue_cells(spec)
    where, name = (
        (". -mindepth 1", "%P") if cells is None else (" ".join(map(q, cells)) + " -mindepth 1", "%p")
    )
    return (
        f"find {where} -name '.*' -prune -o -type f ! -name '*.tmp' -printf '%T@ {name}\\n' 2>/dev/null"
        " | sort -n | tail -n 1"
    )


# The busiest GPU's utilisation (digits only: "[N/A]" reads as nothing); the on-box guard reads the same.
GPU_UTIL = (
    "nvidia-smi --query-gpu=utilization.gpu --format=csv,noheader,nounits 2>/dev/null"
    " | tr -cd '0-9\\n' | sort -n | tail -n 1"
)


def _status_command(spec: JobSpec) -> str:
    jobdir = q(job_dir(spec))
    ck = q(remote_path(spec.checkpoint.dir)) if spec.checkpoint else "''"
    return f"""J={jobdir}; C={ck}; SELF="$J/launcher.sh"
pid=$(cat "$J/pid" 2>/dev/null); alive=0
if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null && {IS_RUN}; then alive=1; fi
echo "alive=$alive"
echo "exit_code=$(cat "$J/exit_code" 2>/dev/null)"
echo "started_at=$(cat "$J/started_at" 2>/dev/null)"
echo "finished_at=$(cat "$J/finished_at" 2>/dev/null)"
echo "detach=$(cat "$J/detach" 2>/dev/null)"
echo "checkpoint_dir=$(head -n 1 "$J/checkpoint_dir" 2>/dev/null)"
[ -e "$J/setup_failed" ] && echo "setup_failed=1"
[ -s "$J/stopped_itself" ] && echo "stopped_itself=$(head -c 200 "$J/stopped_itself" | head -n 1 | tr -cd '[:print:]')"
if [ -n "$C" ] && [ -d "$C" ]; then
  echo "checkpoint=$(cd "$C" && {newest_checkpoint(spec)})"
fi
for f in progress progress.first; do
  [ -s "$J/$f" ] && echo "$f=$(head -c 64 "$J/$f" | head -n 1 | cut -d ' ' -f 1) $(date -r "$J/$f" +%s.%N)"
done
tail -n 50 "$J/runs" 2>/dev/null | sed 's/^/run=/'
command -v nvidia-smi >/dev/null 2>&1 && echo "gpu_util=$({GPU_UTIL})"
{cgroup.status_lines()}echo "now=$(date +%s.%N)"
echo "--log--"
{tail_command(job_dir(spec) + "/run.log", LOG_TAIL_LINES, call_cap=STATUS_CAP)}
true"""


async def recorded_checkpoint_dir(remote: Remote, spec: JobSpec) -> str | None:
    """The checkpoint dir the last run launched on this disk wrote to (its launcher's marker), if any."""
    out = await remote.run(
        f"head -n 1 {q(job_dir(spec) + '/checkpoint_dir')} 2>/dev/null; true",
        what=f"reading where the last run of {spec.name} wrote checkpoints",
    )
    return _clean_dir(out.stdout.strip())


class Quiesce(Model):
    """The run after quiesce_run: not-running (nothing to stop), stopped (exited within the grace),
    killed (SIGKILL after the grace), stuck (still alive after SIGKILL: pids)."""

    state: Literal["not-running", "stopped", "killed", "stuck"]
    waited_s: float = 0.0
    pids: list[int] = Field(default_factory=list)


def _quiesce_command(spec: JobSpec, grace_s: float) -> str:
    jobdir = q(job_dir(spec))
    ticks = max(1, int(grace_s * 10))
    # Every process of the run: the launcher's descendants, re-read while the launcher lives (a run may
    # fork its saver), kept once seen (an orphan is reparented away from the tree but still writes).
    return f"""J={jobdir}; SELF="$J/launcher.sh"; G={ticks}
pid=$(cat "$J/pid" 2>/dev/null)
rm -f "$J/armed"  # the on-box stop (teardown.on_finish/on_failure: stop) never follows gpujob's own quiesce
gone() {{ [ ! -e "/proc/$1" ] || grep -q '^State:[[:space:]]*Z' "/proc/$1/status" 2>/dev/null; }}
ours() {{ [ -n "$pid" ] && ! gone "$pid" && {IS_RUN}; }}
tree() {{ cat /proc/[0-9]*/status 2>/dev/null | awk -v root="$1" '/^Pid:/{{p=$2}} /^PPid:/{{pp[p]=$2}} END{{n=1;q[1]=root;i=1;while(i<=n){{c=q[i];for(k in pp)if(pp[k]==c){{n++;q[n]=k}}i++}}for(j=1;j<=n;j++)print q[j]}}'; }}
living() {{ for p in $all; do gone "$p" || echo "$p"; done; }}
if ! ours; then echo "state=not-running"; exit 0; fi
all=$(tree "$pid")
kids=$(printf '%s\\n' $all | grep -vx "$pid")
if [ -n "$kids" ]; then kill -TERM $kids 2>/dev/null; else kill -TERM "$pid" 2>/dev/null; fi
t=0
while [ -n "$(living)" ] && [ "$t" -lt "$G" ]; do
  gone "$pid" || all=$(printf '%s\\n' $all $(tree "$pid") | sort -un)
  sleep 0.1; t=$((t+1))
done
state=stopped
if [ -n "$(living)" ]; then
  state=killed
  kill -KILL $(living) 2>/dev/null
  k=0; while [ -n "$(living)" ] && [ "$k" -lt 50 ]; do sleep 0.1; k=$((k+1)); done
  if [ -n "$(living)" ]; then echo "state=stuck"; echo "pids=$(living | tr '\\n' ' ')"; exit 0; fi
fi
rm -f "$J/exit_code" "$J/finished_at"
echo "gpujob: run stopped by gpujob before a teardown ($state after $t tenths of a second)" >> "$J/run.log"
echo "state=$state"; echo "waited=$t"
"""


async def quiesce_run(remote: Remote, spec: JobSpec, *, grace_s: float) -> Quiesce:
    """Stop the run the way a platform stop would: SIGTERM to every process of the run, wait up to
    `grace_s` for them to exit (the final save), SIGKILL what is left, and confirm all are gone.

    The run's exit code is not kept: it was stopped, not finished, so a later apply with state:
    running relaunches it (it resumes from its newest checkpoint) instead of reporting a failure."""
    out = (
        await remote.run(
            _quiesce_command(spec, grace_s),
            timeout=grace_s + 60,
            idle=grace_s + remote.limits.idle_s,  # it is silent while the run makes its final save
            what=f"stopping the run of {spec.name} before a teardown",
            left="the run may have been sent SIGTERM; nothing was torn down",
        )
    ).stdout
    kv = dict(line.partition("=")[::2] for line in out.splitlines() if "=" in line)
    state = kv.get("state", "")
    if state not in ("not-running", "stopped", "killed", "stuck"):
        raise RemoteCommandError(f"stop the run of {spec.name}", 0, f"unexpected answer: {out[-200:]!r}")
    ticks = kv.get("waited", "0")
    pids = [int(p) for p in kv.get("pids", "").split() if p.isdigit()]
    return Quiesce(state=state, waited_s=int(ticks) / 10 if ticks.isdigit() else 0.0, pids=pids)  # type: ignore[arg-type]


async def run_status(remote: Remote, spec: JobSpec) -> RunStatus:
    out = (await remote.run(_status_command(spec), what=f"reading the run status of {spec.name}")).stdout
    head, _, log = out.partition("--log--\n")
    kv: dict[str, str] = {}
    runs: list[str] = []
    for line in head.splitlines():
        key, _, value = line.partition("=")
        if key == "run":
            runs.append(value)
        else:
            kv[key] = value.strip()
    last, age = None, None
    if kv.get("checkpoint"):
        mtime, _, name = kv["checkpoint"].partition(" ")
        last = name
        try:
            age = max(0.0, float(kv["now"]) - float(mtime))
        except (KeyError, ValueError):
            age = None
    code = kv.get("exit_code") or ""
    return RunStatus(
        progress=_progress(kv.get("progress"), kv.get("now")),
        progress_first=_progress(kv.get("progress.first"), kv.get("now")),
        history=[r for r in (_past_run(line, kv.get("now")) for line in runs) if r is not None],
        alive=kv.get("alive") == "1",
        exit_code=int(code) if code.lstrip("-").isdigit() else None,
        started_at=kv.get("started_at") or None,
        finished_at=kv.get("finished_at") or None,
        last_checkpoint=last,
        last_checkpoint_age_s=age,
        log_tail=expand(log, call_cap=STATUS_CAP),  # untrusted: show it through redact.from_machine
        setup_failed=kv.get("setup_failed") == "1",
        detach=kv.get("detach") or None,
        checkpoint_dir=_clean_dir(kv.get("checkpoint_dir") or ""),
        stopped_itself=kv.get("stopped_itself") or None,
        gpu_util=int(kv["gpu_util"]) if kv.get("gpu_util", "").isdigit() else None,
        **cgroup.readings(kv),  # type: ignore[arg-type]
    )


def _clean_dir(text: str) -> str | None:
    try:
        return remote_path(text) if text else None
    except ValueError:
        return None  # remote text that is not a clean absolute path is no evidence


def _progress(value: str | None, now: str | None) -> Progress | None:
    """'STEP MTIME' from the status command; None for anything that is not a step number (the file is
    written by the user's command, so it is untrusted text)."""
    step, _, mtime = (value or "").partition(" ")
    if not step.isdigit() or len(step) > 15:
        return None
    try:
        age = max(0.0, float(now or "") - float(mtime))
    except ValueError:
        return None
    return Progress(step=int(step), age_s=age)


def _past_run(line: str, now: str | None) -> PastRun | None:
    """'STARTED_AT FIRST FIRST_MTIME LAST LAST_MTIME EXIT' from $JOBDIR/runs ('-' for unknown)."""
    fields = line.split()
    if len(fields) != 6 or not fields[0]:
        return None
    code = fields[5]
    return PastRun(
        started_at=fields[0][:40],
        first=_progress(f"{fields[1]} {fields[2]}", now),
        last=_progress(f"{fields[3]} {fields[4]}", now),
        exit_code=int(code) if code.lstrip("-").isdigit() and len(code) < 6 else None,
    )
