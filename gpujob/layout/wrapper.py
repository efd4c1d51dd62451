"""The queue machinery on the machine: files placed once, never rewritten under a live queue.

A sweep's files live in a version dir on the durable mount, named by the sha256 of everything in it:

    <mount>/.gpujob/<job>.sweep/v<hash>/queue.sh        the wrapper (holds run.command)
    <mount>/.gpujob/<job>.sweep/v<hash>/q<N>.txt        queue N: one cell name a line
    <mount>/.gpujob/<job>.sweep/v<hash>/cells/<cell>.env the cell's environment (export lines)
    <mount>/.gpujob/<job>.sweep/state/<cell>.*          exit code, starts, first start, outside writes
    <mount>/.gpujob/<job>.sweep/state/version.q<N>      the version last placed for queue N
    <mount>/.gpujob/<job>.sweep/state/running.q<N>      the version whose wrapper runs queue N (its first act)

A running bash reads its script by byte offset, so a script changed under it runs a different file
from the middle (the seed's parallel_ablation.md §2). Every file is written only when absent (to a
temporary name, then renamed), and any change of the command, the cells or the layout gives a new
hash, hence a new dir: a live queue keeps reading its own version. Whoever places a version for queue
N (a launch, or `apply` of a run change while the queue runs) then points state/version.q<N> at it
(a new file renamed over the old: no reader holds it open); the wrapper reads that pointer before each
cell and, when it names another complete version, execs that version's wrapper, so a change applies
from the next cell and the cell in flight is never relaunched. The version carries the run's plain
environment (run.env, checkpoint interval and keep) for that reason. The state dir is shared by all
versions, so a cell that finished (any exit code) never runs again, and a preempted queue starts again
at its in-flight cell, which resumes from its own checkpoint.
"""

from __future__ import annotations

import base64
import hashlib
import shlex
from collections.abc import Sequence
from dataclasses import dataclass, field

from gpujob.jobfile.cells import Cell, cell_checkpoint_dir, cell_dir, sweep_dir
from gpujob.quote import env_name, remote_path

RECORD = "gpujob-cell.txt"  # the cell's record, written into its results dir (pulled with them)
OUTSIDE_MAX = 200
VERSION_POINTER = "version."  # state/version.q<N>: the version last placed for queue N
RUNNING = "running."  # state/running.q<N>: the version whose wrapper runs (or last ran) queue N
COMMAND_MAX = 120_000  # bytes: Linux takes at most 128 KiB in one process argument (MAX_ARG_STRLEN)


@dataclass(frozen=True)
class Placement:
    version: str  # 'v' + 12 hex of the sha256 of every file below
    root: str  # the version dir
    files: dict[str, str]  # path relative to root -> content
    queue_cells: dict[int, tuple[str, ...]] = field(default_factory=dict)  # queue N -> its cells

    def queue_file(self, n: int) -> str:
        return f"{self.root}/q{n}.txt"


_WRAPPER = r"""#!/usr/bin/env bash
# gpujob sweep queue wrapper, version @VERSION@ of job @JOB@. Never edited in place: a change is a new
# version dir, so a live queue keeps reading the bytes it started with.
set -u
V="$(cd "$(dirname "$0")" && pwd)"; P="$(dirname "$V")"; S="$P/state"; Q="$1"; QN="$(basename "$Q" .txt)"
mkdir -p "$S"
# The version now running this queue (gpujob.sweep.rebalance: proof that it picked up a version)
echo @VERSION@ > "$S/running.$QN.tmp.$$" && mv "$S/running.$QN.tmp.$$" "$S/running.$QN"
stop=0; child=""; failed=0
trap 'stop=1; [ -n "$child" ] && kill -TERM "$child" 2>/dev/null' TERM INT HUP
# This version's run environment; names an earlier version set and this one does not are dropped.
for n in ${GPUJOB_SWEEP_ENV:-}; do unset "$n"; done
@ENV@
newer() {  # the version last placed for this queue, when it is complete and not this one
  local v; v=$(head -n 1 "$S/version.$QN" 2>/dev/null) || return 1
  case "$v" in v[0-9a-f]*) ;; *) return 1 ;; esac
  [ -n "$v" ] && [ "$v" != @VERSION@ ] && [ -f "$P/$v/queue.sh" ] && [ -f "$P/$v/$QN.txt" ] || return 1
  echo "$v"
}
pick_up() {  # between cells only: exec the newer version's wrapper on this queue's file there
  if [ "$stop" = 1 ]; then  # a stop that came between cells: no next cell, no next version
    echo "gpujob-sweep: stopped between cells: the next launch goes on"; exit 143
  fi
  local v; v=$(newer) || return 0
  echo "gpujob-sweep: queue $QN picks up version $v (was @VERSION@) $1"
  exec 3<&- bash "$P/$v/queue.sh" "$P/$v/$QN.txt"
}
run_cell() {
  set -a; . "$V/cells/$1.env"; set +a
  mkdir -p "$GPUJOB_CELL_DIR" "$GPUJOB_CHECKPOINT_DIR"
  exec bash -c @COMMAND@
}
outside() {  # files this cell wrote on the durable mount outside its own dirs (caches, gpujob's own and
  # Python's bytecode caches aside: importing the synced code writes those, and they are no result)
  ( set -a; . "$V/cells/$1.env"; set +a
    # On a disk other queues share, the dirs of cells that ran meanwhile (started or finished since this
    # one first started, or in flight on a queue) are theirs to write: skipped. One find, not one per cell.
    busy=(); while IFS= read -r c; do [ -n "$c" ] && [ "$c" != "$1" ] || continue
      busy+=(-o -path "${GPUJOB_CELL_DIR%/*}/$c" -o -path "${GPUJOB_CHECKPOINT_DIR%/*}/$c"); done < <(
      { find "$S" -maxdepth 1 \( -name '*.starts' -o -name '*.exit' \) -newer "$S/$1.t0" 2>/dev/null \
          | sed 's|.*/||; s/\.[a-z]*$//'; cat "$S"/current.* 2>/dev/null; } | sort -u)
    find @MOUNT@ \( -path @MOUNT@/.gpujob -o -path @MOUNT@/.cache -o -path "$GPUJOB_CELL_DIR" \
      -o -path "$GPUJOB_CHECKPOINT_DIR" -o -name __pycache__ @PRUNE@${busy[@]+"${busy[@]}"} \) -prune -o -type f -newer "$S/$1.t0" -print 2>/dev/null \
      | head -n @OUTSIDE_MAX@ )
}
while IFS= read -r cell <&3 || [ -n "$cell" ]; do
  [ -n "$cell" ] || continue
  if [ -e "$S/$cell.exit" ]; then
    code=$(cat "$S/$cell.exit"); [ "$code" = 0 ] || failed=$((failed + 1))
    echo "gpujob-sweep: cell $cell finished before (exit $code): not run again"
    continue
  fi
  pick_up "before cell $cell"
  n=$(( $(cat "$S/$cell.starts" 2>/dev/null || echo 0) + 1 )); echo "$n" > "$S/$cell.starts"
  [ -e "$S/$cell.t0" ] || : > "$S/$cell.t0"
  echo @VERSION@ > "$S/$cell.version"
  echo "$cell" > "$S/current.$QN"
  echo "gpujob-sweep: cell $cell start $n"
  run_cell "$cell" &
  child=$!
  wait "$child"; code=$?
  while kill -0 "$child" 2>/dev/null; do wait "$child"; code=$?; done
  child=""
  if [ "$stop" = 1 ]; then
    echo "gpujob-sweep: stopped during cell $cell (exit $code): the next launch resumes it"
    exit 143
  fi
  outside "$cell" > "$S/$cell.outside"
  echo "$code" > "$S/$cell.exit.tmp" && mv "$S/$cell.exit.tmp" "$S/$cell.exit"
  ( set -a; . "$V/cells/$cell.env"; set +a
    { echo "cell=$cell"; echo "exit=$code"; echo "starts=$n"; echo "version=@VERSION@"; echo "queue=$QN"
      echo "finished_at=$(date -u +%Y-%m-%dT%H:%M:%SZ)"; sed 's/^/outside=/' "$S/$cell.outside"
    } > "$GPUJOB_CELL_DIR/@RECORD@.tmp" && mv "$GPUJOB_CELL_DIR/@RECORD@.tmp" "$GPUJOB_CELL_DIR/@RECORD@" )
  [ "$code" = 0 ] || failed=$((failed + 1))
  echo "gpujob-sweep: cell $cell exited $code"
done 3< "$Q"
pick_up "at the end of its queue"  # a version placed during the last cell may hold new cells
# A drained queue exits 0 even when a cell failed: the cell is not retried, its record and
# `gpujob status` say so, and the machine is pulled and stopped instead of billing idle.
echo "gpujob-sweep: queue $QN done ($failed failed)"
exit 0
"""


def cell_env(cell: Cell, *, job: str, mount: str, ck_dir: str | None) -> str:
    env = dict(cell.values)
    env["GPUJOB_CELL"] = cell.name
    env["GPUJOB_CELL_DIR"] = cell_dir(mount, job, cell.name)
    ck_root = ck_dir or f"{mount}/sweeps/{job}/.checkpoints"
    env["GPUJOB_CHECKPOINT_DIR"] = cell_checkpoint_dir(ck_root, cell.name)
    return "".join(f"{k}={shlex.quote(v)}\n" for k, v in env.items())


def env_lines(env: Sequence[tuple[str, str]]) -> str:
    """The version's run environment as the wrapper sets it (GPUJOB_SWEEP_ENV: the names, so the next
    version can drop the ones it no longer sets)."""
    names = [env_name(k) for k, _ in env]
    lines = [f"export {k}={shlex.quote(v)}" for k, v in zip(names, (v for _, v in env), strict=True)]
    return "\n".join([*lines, f"export GPUJOB_SWEEP_ENV={shlex.quote(' '.join(names))}"])


def place(
    *,
    job: str,
    mount: str,
    ck_dir: str | None,
    command: str,
    queues: list[list[Cell]],
    env: Sequence[tuple[str, str]] = (),
    prune: tuple[str, ...] = (),
) -> Placement:
    """Every file of this sweep version; its name is the hash of all of them. `env`: the run's plain
    environment a cell gets from this version (run.env, checkpoint interval and keep); queue N is
    queues[N-1], an empty one has no file (its number stays free). `prune`: more dirs the isolation
    check skips (the queues' code dirs on a shared volume, which their launches write)."""
    mount = remote_path(mount)
    body: dict[str, str] = {}
    for n, cells in enumerate(queues, start=1):
        if not cells:
            continue
        body[f"q{n}.txt"] = "".join(c.name + "\n" for c in cells)
        for c in cells:
            body[f"cells/{c.name}.env"] = cell_env(c, job=job, mount=mount, ck_dir=ck_dir)
    wrapper = (
        _WRAPPER.replace("@COMMAND@", shlex.quote(command))
        .replace("@MOUNT@", shlex.quote(mount))
        .replace("@OUTSIDE_MAX@", str(OUTSIDE_MAX))
        .replace("@PRUNE@", "".join(f"-o -path {shlex.quote(remote_path(d))} " for d in prune))
        .replace("@RECORD@", RECORD)
        .replace("@JOB@", job)
        .replace("@ENV@", env_lines(env))
    )
    h = hashlib.sha256()
    for key in sorted(body):
        h.update(f"{key}\0{body[key]}\0".encode())
    h.update(wrapper.encode())
    version = "v" + h.hexdigest()[:12]
    files = {"queue.sh": wrapper.replace("@VERSION@", version), **body}
    return Placement(
        version=version,
        root=f"{sweep_dir(mount, job)}/{version}",
        files=files,
        queue_cells={n: tuple(c.name for c in cells) for n, cells in enumerate(queues, start=1) if cells},
    )


def place_command(p: Placement, n: int, *, every: bool = False) -> str:
    """Place the wrapper, queue N's file and its cells' env files (`every`: the whole version, for a
    sweep whose queues share one network volume) where absent, never over an existing one, then point
    state/version.q<N> at this version (a new file renamed over the old one): what a launch runs first,
    and all an `apply` of a run change runs on a live queue's machine. A file is written under a name
    of this queue's, then hard-linked to its place, which fails where another queue placed it first (a
    filesystem without hard links gets a rename). Every file's text travels base64-encoded (its alphabet
    holds no quote, no `$` and no newline), never in a here-document: no value of a cell, of run.command
    or of run.env can end the data early and become shell."""
    root = shlex.quote(p.root)
    lines = [
        "set -eo pipefail",
        f"V={root}",
        'mkdir -p "$V/cells" "$V/../state"',
        f'put() {{ d="$V/$1"; t="$d.tmp.q{n}.$$"; if [ -e "$d" ]; then cat > /dev/null; else cat > "$t" && '
        '{ ln "$t" "$d" 2>/dev/null || [ -e "$d" ] || mv "$t" "$d"; }; rm -f "$t"; fi; }',
    ]
    mine = {"queue.sh", f"q{n}.txt", *(f"cells/{c}.env" for c in p.queue_cells.get(n, ()))}
    if every:
        mine = set(p.files)
    for rel, text in sorted((k, v) for k, v in p.files.items() if k in mine):
        data = base64.b64encode(text.encode()).decode("ascii")
        lines.append(f"printf %s '{data}' | base64 -d | put {shlex.quote(rel)}")
    pointer = f'"$V/../state/{VERSION_POINTER}q{n}"'
    lines.append(f"echo {p.version} > {pointer}.tmp.$$ && mv {pointer}.tmp.$$ {pointer}")
    return "\n".join(lines) + "\n"


def queue_command(p: Placement, n: int, *, every: bool = False) -> str:
    """queue N's run.command: place_command, then run the wrapper on queue N. The launcher hands the
    command to `bash -c`, one process argument: COMMAND_MAX bounds it (gpujob.layout.checks refuses a
    bigger one)."""
    return place_command(p, n, every=every) + f'exec bash "$V/queue.sh" "$V/q{n}.txt"\n'


def version_of(command: str) -> str | None:
    """The version a queue's run.command places ('v…'), or None when it is no queue command."""
    for line in command.splitlines():
        if line.startswith("V="):
            name = shlex.split(line[2:])[0].rstrip("/").rpartition("/")[2] if line[2:] else ""
            return name if name.startswith("v") else None
    return None
