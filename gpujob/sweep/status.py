"""`gpujob status` for a sweep queue: one row per cell (pending / running / done / failed, machine,
step, time and cost), read with one SSH command per queue machine from the wrapper's state dir, or,
when the machine is not running, from the cell records pulled to outputs.pull_to/<cell>/."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

from gpujob.jobfile.cells import cell_dir, sweep_dir
from gpujob.layout.isolation import judge, local_records, parse_record
from gpujob.layout.wrapper import RECORD

MAX_OUTSIDE = 20


def cells_command(spec: Any, queue: Any) -> str:
    """Per cell: 'cell=<name> exit=<code|-> starts=<n> t0=<epoch|-> t1=<epoch|-> current=<0|1> version=<v…|->',
    then its outside writes as 'outside=<cell> <path>' (at most MAX_OUTSIDE each)."""
    state = shlex.quote(sweep_dir(spec.storage.mount, queue.sweep_job) + "/state")
    names = " ".join(shlex.quote(c) for c in _names(queue))
    return f"""S={state}; cur=$(cat "$S/current.q{queue.n}" 2>/dev/null)
for c in {names}; do
  e=$(cat "$S/$c.exit" 2>/dev/null || echo -); n=$(cat "$S/$c.starts" 2>/dev/null || echo 0)
  t0=$(stat -c %Y "$S/$c.t0" 2>/dev/null || echo -); t1=$(stat -c %Y "$S/$c.exit" 2>/dev/null || echo -)
  [ "$c" = "$cur" ] && k=1 || k=0
  v=$(head -c 20 "$S/$c.version" 2>/dev/null | head -n 1 | tr -cd 'a-z0-9'); v=${{v:--}}
  echo "cell=$c exit=$e starts=$n t0=$t0 t1=$t1 current=$k version=$v"
  head -n {MAX_OUTSIDE} "$S/$c.outside" 2>/dev/null | sed "s|^|outside=$c |"
done; true"""


def _names(queue: Any) -> list[str]:
    """The queue's cells, and the cells leaving it (gpujob.sweep.rebalance): pending here until they land."""
    return [c.name for c in queue.cells] + list(getattr(queue, "leaving", ()))


def parse_cells(out: str, *, machine: str, alive: bool, step: int | None, usd_per_hour: float) -> list[dict]:
    rows: list[dict] = []
    outside: dict[str, list[str]] = {}
    for line in out.splitlines():
        if line.startswith("outside="):
            cell, _, path = line[len("outside=") :].partition(" ")
            outside.setdefault(cell, []).append(path)
            continue
        kv = dict(part.partition("=")[::2] for part in line.split())
        if "cell" not in kv:
            continue
        code = kv.get("exit", "-")
        t0, t1 = kv.get("t0", "-"), kv.get("t1", "-")
        secs = float(t1) - float(t0) if t0.isdigit() and t1.isdigit() else None
        running = code == "-" and kv.get("current") == "1" and alive
        state = (
            "done"
            if code == "0"
            else "failed"
            if code.lstrip("-").isdigit()
            else "running"
            if running
            else "pending"
        )
        rows.append(
            {
                "cell": kv["cell"],
                "state": state,
                "machine": machine,
                "exit_code": int(code) if code.lstrip("-").isdigit() else None,
                "starts": int(kv["starts"]) if kv.get("starts", "").isdigit() else 0,
                "step": step if running else None,
                "seconds": secs,
                "cost_usd": secs / 3600 * usd_per_hour if secs is not None else None,
                "version": _version(kv.get("version")),
            }
        )
    for row in rows:
        row["outside"] = outside.get(row["cell"], [])
    return rows


def _version(text: str | None) -> str | None:
    """The run version a cell ran under ('v' and hex), or None (machine text: checked, never trusted)."""
    return text if text and text.startswith("v") and text[1:].isalnum() and len(text) <= 20 else None


def local_cells(spec: Any, queue: Any, pull_to: Path, machine: str) -> list[dict]:
    """Rows from the pulled cell records: done or failed when pulled, else 'unknown' (not read)."""
    recs = local_records(pull_to, _names(queue))
    rows = []
    for cell, rec in recs.items():
        state = "unknown" if rec is None or rec.exit is None else "done" if rec.exit == 0 else "failed"
        rows.append(
            {
                "cell": cell,
                "state": state,
                "machine": machine,
                "exit_code": rec.exit if rec else None,
                "starts": rec.starts if rec else 0,
                "step": None,
                "seconds": None,
                "cost_usd": None,
                "outside": list(rec.outside) if rec else [],
                "version": rec.version if rec else None,
            }
        )
    return rows


def isolation(spec: Any, queue: Any, rows: list[dict]) -> dict[str, list[str]]:
    """Errors (writes into another cell's dir) and warnings (other writes outside a cell's own dirs)."""
    from gpujob.layout.isolation import CellRecord

    recs = [CellRecord(r["cell"], r["exit_code"], r["starts"], tuple(r["outside"])) for r in rows]
    roots = [cell_dir(spec.storage.mount, queue.sweep_job, "x").rpartition("/")[0]]
    if spec.checkpoint is not None:
        roots.append(spec.checkpoint.dir)
    # the other queues' cells count too: a write into any cell's dir of the sweep is an error
    names = [c.name for c in queue.all_cells]
    verdict = judge(recs, cell_roots=roots, cells=names)
    return {"errors": verdict.errors, "warnings": verdict.warnings}


def table(rows: list[dict]) -> list[str]:
    from gpujob.plan.costs import usd2

    lines = [
        f"  {'cell':<34} {'state':<8} {'machine':<34} {'step':>5} {'starts':>6} {'time':>7} {'cost':>8}  version"
    ]
    for r in rows:
        step = "-" if r["step"] is None else str(r["step"])
        secs = "-" if r["seconds"] is None else f"{r['seconds']:.0f}s"
        cost = "-" if r["cost_usd"] is None else usd2(r["cost_usd"])
        state = r["state"] + (f" ({r['exit_code']})" if r["state"] == "failed" else "")
        lines.append(
            f"  {r['cell']:<34} {state:<8} {r['machine']:<34} {step:>5} {r['starts']:>6} {secs:>7} {cost:>8}"
            f"  {r.get('version') or '-'}"
        )
    return lines


__all__ = ["RECORD", "cells_command", "isolation", "local_cells", "parse_cells", "parse_record", "table"]


async def collect(view: Any, row: dict, open_remote: Any, ssh: Any, clock: Any) -> None:
    """Add 'cells' and 'isolation' to a status row of a sweep queue (nothing for any other job)."""
    from gpujob.errors import GpujobError
    from gpujob.layout.outputs import pull_to

    queue = getattr(view.loaded, "sweep", None)
    if queue is None:
        return
    spec, m = view.spec, view.machine
    name = m.name if m is not None else "-"
    rows: list[dict] | None = None
    if m is not None and m.status == "running":
        run = row.get("run") or {}
        try:
            async with open_remote(view.target(), ssh, clock, lambda _m: None) as remote:
                out = await remote.run(cells_command(spec, queue), what=f"reading the cells of {spec.name}")
            step = None  # the run's progress is the in-flight cell's
            st = run.get("progress_step")
            step = st if isinstance(st, int) else None
            rows = parse_cells(
                out.stdout, machine=name, alive=bool(run.get("alive")), step=step,
                usd_per_hour=float(row.get("usd_per_hour") or 0.0),
            )  # fmt: skip
        except GpujobError:
            rows = None
    if rows is None:
        rows = local_cells(spec, queue, pull_to(spec, view.loaded.path), name)
    row["cells"] = rows
    row["isolation"] = isolation(spec, queue, rows)


def text(row: dict) -> list[str]:
    if "cells" not in row:
        return []
    lines = ["  cells:", *table(row["cells"])]
    iso = row.get("isolation") or {}
    lines += [f"  error:     {e}" for e in iso.get("errors", [])]
    lines += [f"  warning:   {w}" for w in iso.get("warnings", [])]
    return lines


def roster(rows: list[dict]) -> list[str]:
    """One line per sweep over all its queues: the roster is every cell, whichever machine has it."""
    from gpujob.naming import sweep_of

    counts: dict[str, dict[str, int]] = {}
    for row in rows:
        of = sweep_of(row["job"])
        if of is None or "cells" not in row:
            continue
        mine = counts.setdefault(of[0], {})
        for cell in row["cells"]:
            mine[cell["state"]] = mine.get(cell["state"], 0) + 1
    order = ("done", "running", "pending", "failed", "unknown")
    return [
        f"sweep {name}: {sum(c.values())} cells: "
        + ", ".join(f"{c.get(s, 0)} {s}" for s in order if c.get(s) or s in order[:4])
        for name, c in counts.items()
    ]
