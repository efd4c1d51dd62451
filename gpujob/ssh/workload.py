"""The workload quiesce: before the final pull of a terminate, every process of the job's workload that
can still write is stopped, not only the launcher's tree (launcher.quiesce_run does that part first,
with its grace for the final save).

A workload process is one that carries the run's environment marker, GPUJOB_JOB=<job>: the launcher
exports it, and every process the run starts inherits it, including a helper started with `setsid … &`
and a trainer that double-forks (both leave the launcher's tree, neither leaves its environment). A
process the user started by hand (`gpujob ssh`) without it is not the run's and is left alone, as is
everything that is not the workload's, whatever its environment says:

  - PID 1 and the kernel's threads;
  - sshd (every process named sshd*) and all of its ancestors;
  - this command's own session and its ancestors (the gate's connection);
  - the platform's agents (PROTECTED names);
  - in the simulator's `plain` pod mode (no pid namespace: the host's processes are visible), any
    process that does not carry the pod's own GPUJOB_SIM_POD key: the pod's processes only.

Each gets SIGTERM; processes that appear while the grace runs (a supervisor respawning) get it too;
after the grace SIGKILL, and the processes are listed again: any still there are named (stuck)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from gpujob.errors import RemoteCommandError
from gpujob.jobfile.model import JobSpec
from gpujob.model import Model
from gpujob.quote import q
from gpujob.ssh.session import Remote

# Process names (the kernel's 15-character comm) that are the platform's or the system's, never the
# workload's, whatever they inherited.
PROTECTED = (
    "sshd",
    "sshd-session",
    "systemd",
    "init",
    "tini",
    "dumb-init",
    "docker-init",
    "containerd",
    "containerd-shim",
    "dockerd",
    "runc",
    "nginx",
    "cron",
    "rsyslogd",
    "dbus-daemon",
    "agetty",
    "nvidia-persistenced",
    "runpod",
    "paperspace",
)


class StoppedProcess(Model):
    pid: int
    name: str


class WorkloadQuiesce(Model):
    """none: no workload process was running; stopped: all exited after SIGTERM within the grace;
    killed: some needed SIGKILL; stuck: some are still there after SIGKILL (`left`)."""

    state: Literal["none", "stopped", "killed", "stuck"]
    stopped: list[StoppedProcess] = Field(default_factory=list)  # every process that got SIGTERM
    left: list[StoppedProcess] = Field(default_factory=list)  # still running after SIGKILL

    def describe(self) -> str:
        if self.state == "none":
            return "no other workload process was running"
        names = ", ".join(f"{p.name} ({p.pid})" for p in self.stopped[:6])
        more = f" and {len(self.stopped) - 6} more" if len(self.stopped) > 6 else ""
        how = {"stopped": "exited after SIGTERM", "killed": "stopped (SIGKILL after the grace)"}.get(
            self.state, "not all stopped"
        )
        return f"{len(self.stopped)} more workload process(es) {how}: {names}{more}"


# `targets` prints "pid comm" for every workload process not protected: the marked ones come from one
# grep over every environment, the protections from one read of every /proc/<pid>/stat (fields after
# the last ')': state ppid pgrp session ...).
_SCRIPT = r"""MARK={mark}; G={ticks}; AGENTS={agents}
me=$$
scope=${{GPUJOB_SIM_POD:+GPUJOB_SIM_POD=$GPUJOB_SIM_POD}}
has() {{ tr '\0' '\n' < "$2" 2>/dev/null | grep -qxF -- "$1"; }}
if printf 'x\0' | grep -qzxF x 2>/dev/null; then
  candidates() {{ {{ grep -lzxF -- "$MARK" /proc/[0-9]*/environ; }} 2>/dev/null; }}
else  # a grep without -z (busybox): one look per process
  candidates() {{ for f in /proc/[0-9]*/environ; do {{ has "$MARK" "$f"; }} 2>/dev/null && echo "$f"; done; }}
fi
marked() {{
  candidates | while read -r f; do
    if [ -z "$scope" ] || {{ has "$scope" "$f"; }} 2>/dev/null; then p=${{f#/proc/}}; echo "${{p%/environ}}"; fi
  done
}}
targets() {{
  m=$(marked | tr '\n' ' ')
  [ -n "${{m# }}" ] || return 0
  {{ cat /proc/[0-9]*/stat; }} 2>/dev/null | awk -v me="$me" -v marked="$m" -v agents="$AGENTS" '
    {{ r=$0; i=0; while ((j=index(substr(r, i+1), ")")) > 0) i+=j
       o=index(r, "("); p=$1; c[p]=substr(r, o+1, i-o-1); gsub(/[^A-Za-z0-9._:\/-]/, "_", c[p])
       split(substr(r, i+2), f, " "); st[p]=f[1]; pp[p]=f[2]; sid[p]=f[4] }}
    END {{
      n=split(agents, a, " "); for (k=1; k<=n; k++) ag[a[k]]=1
      prot[1]=1; prot[2]=1
      for (p in pp) {{
        if (pp[p]==2 || sid[p]==sid[me]) prot[p]=1
        if (c[p] in ag || c[p] ~ /^sshd/) {{ q=p; k=0; while (q in pp && k<64) {{ prot[q]=1; q=pp[q]; k++ }} }}
      }}
      q=me; k=0; while (q in pp && k<64) {{ prot[q]=1; q=pp[q]; k++ }}
      n=split(marked, mk, " ")
      for (k=1; k<=n; k++) {{ p=mk[k]; if ((p in st) && st[p]!="Z" && !(p in prot)) print p, c[p] }}
    }}'
}}
seen=""
now=$(targets)
[ -z "$now" ] && {{ echo "state=none"; exit 0; }}
term() {{
  printf '%s\n' "$now" | while read -r p n; do
    case " $seen " in *" $p "*) ;; *) echo "stopped=$p $n"; kill -TERM "$p" 2>/dev/null;; esac
  done
}}
term; seen="$seen $(printf '%s\n' "$now" | awk '{{print $1}}' | tr '\n' ' ')"
t=0
while [ "$t" -lt "$G" ]; do
  sleep 0.1; t=$((t+1))
  now=$(targets); [ -z "$now" ] && break
  term; seen="$seen $(printf '%s\n' "$now" | awk '{{print $1}}' | tr '\n' ' ')"
done
state=stopped
k=0
while [ -n "$now" ] && [ "$k" -lt 50 ]; do
  state=killed
  term; seen="$seen $(printf '%s\n' "$now" | awk '{{print $1}}' | tr '\n' ' ')"
  printf '%s\n' "$now" | awk '{{print $1}}' | xargs -r kill -KILL 2>/dev/null
  sleep 0.1; k=$((k+1))
  now=$(targets)
done
if [ -n "$now" ]; then
  echo "state=stuck"; printf '%s\n' "$now" | sed 's/^/left=/'; exit 0
fi
echo "state=$state"
"""


def quiesce_command(spec: JobSpec, grace_s: float) -> str:
    return _SCRIPT.format(
        mark=q(f"GPUJOB_JOB={spec.name}"), ticks=max(1, int(grace_s * 10)), agents=q(" ".join(PROTECTED))
    )


async def quiesce_workload(remote: Remote, spec: JobSpec, *, grace_s: float) -> WorkloadQuiesce:
    """SIGTERM every workload process (see the module docstring), up to `grace_s` for them to exit,
    SIGKILL what is left, and confirm by listing them again."""
    out = (
        await remote.run(
            quiesce_command(spec, grace_s),
            timeout=grace_s + 60,
            idle=grace_s + remote.limits.idle_s,
            what=f"stopping the workload of {spec.name} before a teardown",
            left="workload processes may have been sent SIGTERM; nothing was torn down",
        )
    ).stdout
    state = ""
    stopped: list[StoppedProcess] = []
    left: list[StoppedProcess] = []
    for line in out.splitlines():
        key, _, value = line.partition("=")
        pid, _, name = value.partition(" ")
        if key == "state":
            state = value.strip()
        elif key in ("stopped", "left") and pid.isdigit():
            (stopped if key == "stopped" else left).append(StoppedProcess(pid=int(pid), name=name[:64]))
    if state not in ("none", "stopped", "killed", "stuck"):
        raise RemoteCommandError(f"stop the workload of {spec.name}", 0, f"unexpected answer: {out[-200:]!r}")
    return WorkloadQuiesce(state=state, stopped=stopped, left=left)  # type: ignore[arg-type]
