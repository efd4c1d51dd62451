"""The queue machinery on the machine: files placed once, never rewritten under a live queue.

A sweep's files live in a version dir on the durable mount, named by the sha256 of everything in it:

    <mount>/.gpujob/<job>.sweep/v<hash>/queue.sh        the wrapper (holds run.command)
    <mount>/.gpujob/<job>.sweep/v<hash>/q<N>.txt        queue N: one cell name a line
    <mount>/.gpujob/<job>.sweep/v<hash>/cells/<cell>.env the cell's environment (export lines)
    <mount>/.gpujob/<job>.sweep/state/<cell>.*          exit code, starts, first start, outside writes

A running bash reads its script by byte offset, so a script changed under it runs a different file
from the middle (the seed's parallel_ablation.md §2). Every file is written only when absent (to a
temporary name, then renamed), and any change of the command, the cells or the layout gives a new
hash, hence a new dir: a live queue keeps reading its own version; the next launch of a queue runs the
new one. The state dir is shared by all versions, so a cell that finished (any exit code) never runs
again, and a preempted queue starts again at its in-flight cell, which resumes from its own checkpoint.
"""

from __future__ import annotations

import hashlib
import shlex
from dataclasses import dataclass, field

from gpujob.ssh.quote import remote_path
from gpujob.sweep.cells import Cell

RECORD = "gpujob-cell.txt"  # the cell's record, written into its results dir (pulled with them)
OUTSIDE_MAX = 200
COMMAND_MAX = 120_000  # bytes: Linux takes at most 128 KiB in one process argument (MAX_ARG_STRLEN)


def sweep_dir(mount: str, job: str) -> str:
    return remote_path(f"{mount}/.gpujob/{job}.sweep")


def cell_dir(mount: str, job: str, cell: str) -> str:
    """GPUJOB_CELL_DIR: the cell's results, always an output of its queue."""
    return remote_path(f"{mount}/sweeps/{job}/{cell}")


def cell_checkpoint_dir(ck_dir: str, cell: str) -> str:
    return remote_path(f"{ck_dir}/{cell}")


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
V="$(cd "$(dirname "$0")" && pwd)"; S="$(dirname "$V")/state"; Q="$1"
mkdir -p "$S"
stop=0; child=""; failed=0
trap 'stop=1; [ -n "$child" ] && kill -TERM "$child" 2>/dev/null' TERM INT HUP
run_cell() {
  set -a; . "$V/cells/$1.env"; set +a
  mkdir -p "$GPUJOB_CELL_DIR" "$GPUJOB_CHECKPOINT_DIR"
  exec bash -c @COMMAND@
}
outside() {  # files this cell wrote on the durable mount outside its own dirs (caches, gpujob's own and
  # Python's bytecode caches aside: importing the synced code writes those, and they are no result)
  ( set -a; . "$V/cells/$1.env"; set +a
    find @MOUNT@ \( -path @MOUNT@/.gpujob -o -path @MOUNT@/.cache -o -path "$GPUJOB_CELL_DIR" \
      -o -path "$GPUJOB_CHECKPOINT_DIR" -o -name __pycache__ \) -prune -o -type f -newer "$S/$1.t0" -print 2>/dev/null \
      | head -n @OUTSIDE_MAX@ )
}
while IFS= read -r cell <&3 || [ -n "$cell" ]; do
  [ -n "$cell" ] || continue
  if [ -e "$S/$cell.exit" ]; then
    code=$(cat "$S/$cell.exit"); [ "$code" = 0 ] || failed=$((failed + 1))
    echo "gpujob-sweep: cell $cell finished before (exit $code): not run again"
    continue
  fi
  n=$(( $(cat "$S/$cell.starts" 2>/dev/null || echo 0) + 1 )); echo "$n" > "$S/$cell.starts"
  [ -e "$S/$cell.t0" ] || : > "$S/$cell.t0"
  echo "$cell" > "$S/current.$(basename "$Q" .txt)"
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
    { echo "cell=$cell"; echo "exit=$code"; echo "starts=$n"; echo "version=@VERSION@"
      echo "finished_at=$(date -u +%Y-%m-%dT%H:%M:%SZ)"; sed 's/^/outside=/' "$S/$cell.outside"
    } > "$GPUJOB_CELL_DIR/@RECORD@.tmp" && mv "$GPUJOB_CELL_DIR/@RECORD@.tmp" "$GPUJOB_CELL_DIR/@RECORD@" )
  [ "$code" = 0 ] || failed=$((failed + 1))
  echo "gpujob-sweep: cell $cell exited $code"
done 3< "$Q"
# A drained queue exits 0 even when a cell failed: the cell is not retried, its record and
# `gpujob status` say so, and the machine is pulled and stopped instead of billing idle.
echo "gpujob-sweep: queue $(basename "$Q" .txt) done ($failed failed)"
exit 0
"""


def cell_env(cell: Cell, *, job: str, mount: str, ck_dir: str | None) -> str:
    env = dict(cell.values)
    env["GPUJOB_CELL"] = cell.name
    env["GPUJOB_CELL_DIR"] = cell_dir(mount, job, cell.name)
    ck_root = ck_dir or f"{mount}/sweeps/{job}/.checkpoints"
    env["GPUJOB_CHECKPOINT_DIR"] = cell_checkpoint_dir(ck_root, cell.name)
    return "".join(f"{k}={shlex.quote(v)}\n" for k, v in env.items())


def place(*, job: str, mount: str, ck_dir: str | None, command: str, queues: list[list[Cell]]) -> Placement:
    """Every file of this sweep version; its name is the hash of all of them."""
    mount = remote_path(mount)
    body: dict[str, str] = {}
    for n, cells in enumerate(queues, start=1):
        body[f"q{n}.txt"] = "".join(c.name + "\n" for c in cells)
        for c in cells:
            body[f"cells/{c.name}.env"] = cell_env(c, job=job, mount=mount, ck_dir=ck_dir)
    wrapper = (
        _WRAPPER.replace("@COMMAND@", shlex.quote(command))
        .replace("@MOUNT@", shlex.quote(mount))
        .replace("@OUTSIDE_MAX@", str(OUTSIDE_MAX))
        .replace("@RECORD@", RECORD)
        .replace("@JOB@", job)
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
        queue_cells={n: tuple(c.name for c in cells) for n, cells in enumerate(queues, start=1)},
    )


def queue_command(p: Placement, n: int) -> str:
    """queue N's run.command: place the wrapper, queue N's file and its cells' env files where absent
    (never over an existing one), then run the wrapper on queue N. The launcher hands the command to
    `bash -c`, one process argument: COMMAND_MAX bounds it (gpujob.sweep.checks refuses a bigger one)."""
    root = shlex.quote(p.root)
    lines = [
        "set -e",
        f"V={root}",
        'mkdir -p "$V/cells"',
        'put() { if [ -e "$V/$1" ]; then cat > /dev/null; else cat > "$V/$1.tmp.$$" && mv "$V/$1.tmp.$$" "$V/$1"; fi; }',
    ]
    mine = {"queue.sh", f"q{n}.txt", *(f"cells/{c}.env" for c in p.queue_cells.get(n, ()))}
    for i, (rel, text) in enumerate(sorted((k, v) for k, v in p.files.items() if k in mine)):
        mark = f"GPUJOB_SWEEP_EOF_{i}"
        assert mark not in text
        lines.append(f"put {shlex.quote(rel)} <<'{mark}'\n{text}{mark}")
    lines.append(f'exec bash "$V/queue.sh" "$V/q{n}.txt"')
    return "\n".join(lines) + "\n"
