"""`gpujob status [JOBFILE...]`: state, cost so far, runtime, last checkpoint and its age, the run."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from gpujob.cli.main import run_command

if TYPE_CHECKING:
    from gpujob.chart import Style
from gpujob.cli.options import no_color_option

HELP = """Show each job's machine, what it has cost since it started, and how the run is doing.
A sweep adds a cell table to each queue (pending / running / done / failed, machine, step, cost) and
a line per sweep with its counts (docs/sweeps.md).

\b
Examples:
  gpujob status
  gpujob status --format json
"""


@click.command(name="status", help=HELP)
@click.argument("targets", nargs=-1, type=click.Path(path_type=Path))
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@no_color_option(help="Plain output: no colour, ASCII charts (also with NO_COLOR set, or piped).")
@click.option("--chart", is_flag=True, help="Steps and spend over time against the forecast's P50-P90 band.")
def command(targets: tuple[Path, ...], fmt: str, no_color: bool, chart: bool) -> None:
    sys.exit(run_command(_status, targets, fmt, no_color, chart))


def _status(targets: tuple[Path, ...], fmt: str, no_color: bool = False, chart: bool = False) -> int:
    import asyncio
    import json

    from gpujob.spec.load import load_specs, resolve_job_files

    loaded = load_specs(resolve_job_files(list(targets), command="status"))
    rows = asyncio.run(_collect(loaded))
    from gpujob.safe import for_terminal

    if fmt == "json":
        click.echo(json.dumps(rows, indent=2, default=str))  # names as they are: JSON escapes them
    else:
        from gpujob.chart import terminal_style
        from gpujob.cli.options import color_wanted

        style = terminal_style(color_wanted(no_color))
        for row in rows:
            click.echo(_text(row, style, chart=chart))
        from gpujob.sweep.status import roster

        for line in roster(rows):
            click.echo(line)
    # A stalled machine, or one that refuses the project key: shown above, then the error; exit 1.
    failed = [run[k] for row in rows for k in ("stalled", "failed") if k in (run := row.get("run") or {})]
    for message in failed:
        click.echo(for_terminal(message, lines=True), err=True)
    # the README's promise: status fails when it cannot read a run it should (a stall, no answer)
    unread = [row for row in rows if (row.get("run") or {}).get("unreadable")]
    crossed = [e for row in rows for e in (row.get("isolation") or {}).get("errors", [])]
    return 1 if failed or unread or crossed else 0


async def _collect(loaded):  # type: ignore[no-untyped-def]
    from datetime import UTC, datetime

    from gpujob.apply.observe import job_views
    from gpujob.apply.runtime import NOT_COMING, MachineNotRunning, open_remote
    from gpujob.apply.sshapi import SSHApi
    from gpujob.clock import SystemClock

    rows = []
    now = datetime.now(UTC)
    async with job_views(loaded) as views:
        providers = {p: x for v in views for p, x in (v.providers or {v.spec.platform: v.provider}).items()}
        from gpujob.failover.money import read_costs_anywhere

        report = await read_costs_anywhere([v.loaded for v in views], providers)  # with their project ids
        money = {j.job: j for j in report.jobs if j.platform == next(
            (v.spec.platform for v in views if v.spec.name == j.job), j.platform)}  # fmt: skip
        others = [j for j in report.jobs if j not in money.values()]
        from gpujob.cli.session import follow_migrations

        for v in views:
            follow_migrations([v.loaded], v.listed)
            row: dict = {"job": v.spec.name, "platform": v.spec.platform, "desired": v.spec.state}
            m = v.machine
            cost = money.get(v.spec.name)
            row["machine"] = None if m is None else {
                "name": m.name, "id": m.id, "status": m.raw_status or m.status, "gpu": m.gpu_id,
                "gpu_billed": cost.gpu if cost else None, "region": m.region,
            }  # fmt: skip
            if m is not None and m.nodes:  # a multi-node job: every node, rank order (docs/multinode.md)
                row["machine"]["nodes"] = [
                    {"rank": n.rank, "id": n.machine_id, "name": n.name, "status": n.raw_status or n.status,
                     "private_ip": n.private_ip, "ssh": f"{n.ssh.host}:{n.ssh.port}" if n.ssh else None}
                    for n in m.nodes
                ]  # fmt: skip
            if v.volume is not None:
                row["network_volume"] = {"name": v.volume.name, "id": v.volume.id, "gb": v.volume.volume_gb}
            if cost is not None:
                # the same figures as `gpujob cost`: every resource of the job, not only its machine
                row["usd_per_hour"] = cost.burn_usd_per_hour
                row["cost_usd"] = cost.spent_usd
                row["cost_source"] = "estimate" if cost.estimate else "billing"
                row["billing_now"] = [
                    {"what": x.what, "usd_per_hour": x.usd_per_hour, "usd_per_month": x.usd_per_month}
                    for x in cost.meters
                ]
                if cost.elapsed_s is not None:
                    row["runtime_h"] = cost.elapsed_s / 3600
            if m is not None and m.status == "running" and v.spec.run is not None:
                row["run"] = await _run_status(v, open_remote, SSHApi.default(), SystemClock())
                if m.nodes:  # a gang: every node's own run, read at once (node 0's is row["run"])
                    await _node_runs(v, row)
            elif m is not None and m.status in NOT_COMING and v.spec.run is not None:
                row["run"] = stopped_run(v.loaded, m) or {"error": str(MachineNotRunning(v.spec, m))}
            from gpujob.sweep.status import collect

            await collect(v, row, open_remote, SSHApi.default(), SystemClock())
            if v.pull is not None:
                row["last_pull"] = {"at": v.pull.at, "files": len(v.pull.files), "complete": v.pull.complete}
            row.update(elsewhere_rows([j for j in others if j.job == v.spec.name]))
            row.update(_watch_rows(v.state_dir, v.spec.name, now))
            from gpujob.plan.costs import one_total

            counted = row["watch"]["goodput"]["usd"] if "watch" in row else None
            row["money"] = one_total(cost, [j for j in others if j.job == v.spec.name], counted)
            row.update(forecast_row(v, row, cost, now))
            from gpujob.plan.records import load_destroyed

            destroyed = load_destroyed(v.state_dir, v.spec.name)
            if destroyed is not None:
                row["destroyed"] = destroyed.describe()
            rows.append(row)
    return rows


def elsewhere_rows(others: list[Any]) -> dict[str, Any]:
    """What a job holds or held on the other platforms of its chain (gpujob.failover; one JobCost of
    `gpujob cost` each): `elsewhere`, what is still there, billing (gone resources left out); else
    `spent_elsewhere`, what it spent there: the job's money is the sum of both, as cost totals it."""
    away = [j for j in others if any(r.state != "gone" for r in j.resources)]
    out: dict[str, Any] = {}
    if away:
        out["elsewhere"] = [
            {"platform": j.platform, "cost_usd": j.spent_usd, "usd_per_hour": j.burn_usd_per_hour,
             "resources": [f"{r.kind} {r.name} {r.state}" for r in j.resources if r.state != "gone"]}
            for j in away
        ]  # fmt: skip
    gone = [j for j in others if j not in away and j.spent_usd > 0]
    if gone:
        out["spent_elsewhere"] = [{"platform": j.platform, "cost_usd": j.spent_usd} for j in gone]
    return out


def _watch_rows(state_dir, job, now):  # type: ignore[no-untyped-def]
    """What `gpujob watch` recorded: its last events, goodput, and whether the job is parked or finished."""
    from gpujob.chart.jobs import series
    from gpujob.watch.events import read_events
    from gpujob.watch.ledger import read_ledger

    out: dict = {
        "events": [e.model_dump(mode="json") for e in read_events(state_dir, job, last=EVENTS_SHOWN)]
    }
    ledger = read_ledger(state_dir, job)
    if ledger is not None:
        out["watch"] = {
            "goodput": ledger.goodput(now).model_dump(mode="json"),
            "parked": ledger.parked.model_dump(mode="json") if ledger.parked else None,
            "finished": ledger.finished_digest is not None,
            "series": series(ledger),
        }
    return out


EVENTS_SHOWN = 5


def forecast_row(view: Any, row: dict, cost: Any, now: Any) -> dict:
    """The forecast (run.total_steps) updated from what status read: the run's newest step, the spend
    so far and the rate now; the pace is watch's (its ledger), else the job file's."""
    from gpujob.cost.history import read_history
    from gpujob.cost.job_forecast import Now, job_forecast
    from gpujob.profile import load_profile

    m = view.machine
    if cost is None or m is None or m.status != "running":
        return {}
    offer = load_profile(view.spec.platform).gpu(m.gpu_id) if m.gpu_id else None
    step = (row.get("run") or {}).get("progress_step")
    live = Now(at=now, usd_per_hour=cost.burn_usd_per_hour, gpu=offer.alias if offer else None,
               spot=m.spot, spent_usd=cost.spent_usd, steps_done=step,
               rate_source="the rate billing now (gpujob cost)", spent_source="gpujob cost")  # fmt: skip
    f = job_forecast(view.spec, live, read_history(view.state_dir, view.spec.name))
    return {"forecast": f.model_dump(mode="json")} if f is not None else {}


def stopped_run(loaded: Any, machine: Any) -> dict | None:
    """The run of a machine that is not running, when it is known finished (so `gpujob apply` would
    not start it: saying it would is wrong); None when it is not known."""
    from gpujob.apply.runfacts import journal_facts
    from gpujob.layout.isolation import queue_drained

    state = machine.raw_status or machine.status
    if queue_drained(loaded):
        note = f"every cell of queue q{loaded.sweep.n} is done and pulled; its {state} machine is not started again"
    elif journal_facts(loaded).get("finished_for_digest"):
        note = f"finished with this job file; its {state} machine is not started again until the file changes"
    else:
        return None
    return {"state": "finished", "exit_code": 0, "note": note}


def _node_run_text(run: dict[str, Any] | None) -> str:
    if not run:
        return ""
    if run.get("error"):
        return f", run unreadable: {run['error']}"
    code = f" (exit {run['exit_code']})" if run.get("exit_code") is not None else ""
    return f", run {run.get('state')}{code}"


async def _node_runs(view: Any, row: dict[str, Any]) -> None:
    """Each node's run state under its line in row["machine"]["nodes"] (issue #38)."""
    from gpujob.apply.runtime.gang import node_runs
    from gpujob.apply.sshapi import SSHApi

    runs = await node_runs(view.target(), SSHApi.default())
    for node in row["machine"]["nodes"]:
        st = runs.get(node["rank"])
        node["run"] = (
            {"error": st}
            if isinstance(st, str) or st is None
            else {"state": st.state, "alive": st.alive, "exit_code": st.exit_code}
        )


async def _run_status(view, open_remote, ssh, clock):  # type: ignore[no-untyped-def]
    from datetime import UTC, datetime

    from gpujob.disks.usage import warnings as disk_warnings
    from gpujob.errors import GpujobError, SSHConnectError, SSHKeyRefused
    from gpujob.plan.run_evidence import status_warnings
    from gpujob.redact import from_machine
    from gpujob.ssh.deadline import SSHStalled

    try:
        async with open_remote(view.target(), ssh, clock, lambda _m: None) as remote:
            st = await ssh.run_status(remote, view.spec)
            disks = await ssh.read_disks(remote, view.spec) if ssh.read_disks is not None else []
    except SSHStalled as exc:  # the machine stopped answering: status says so and exits 1
        return {"error": str(exc).splitlines()[0], "stalled": exc.render(), "unreadable": True}
    except SSHKeyRefused as exc:  # it will not answer this key however long we wait: an error
        return {
            "error": str(exc).splitlines()[0],
            "hint": exc.hint,
            "failed": exc.render(),
            "unreadable": True,
        }
    except SSHConnectError as exc:  # a running machine that does not answer: say what to check, exit 1
        return {"error": str(exc).splitlines()[0], "hint": exc.hint, "unreadable": True}
    except GpujobError as exc:
        return {"error": str(exc).splitlines()[0], "unreadable": True}
    return {
        "state": st.state,
        "alive": st.alive,
        "exit_code": st.exit_code,
        # what ended it, from inside the machine (U3/U41): out of memory, a reboot, a signal
        "ended": getattr(st, "ended", None),
        "memory_limit": getattr(st, "memory_limit", None),
        "started_at": st.started_at,
        "last_checkpoint": st.last_checkpoint,
        "last_checkpoint_age_s": st.last_checkpoint_age_s,
        "progress_step": st.progress.step if st.progress is not None else None,
        # are checkpoints really written and resumed from (the plan asks the same: gpujob.plan.run_evidence)
        "warnings": status_warnings(view.spec, st, view.pull, datetime.now(UTC)),
        "last_log_line": from_machine((st.log_tail.strip().splitlines() or [""])[-1], raw=True),
        "disks": [d.as_dict() for d in disks],  # gpujob.disks.usage: bytes and inodes, mount and /
        "disk_warnings": disk_warnings(disks),
    }


class _Drawn(str):
    """A line gpujob drew itself (a chart, with its colours): not escaped."""


def _text(row: dict, style: Style | None = None, *, chart: bool = False) -> str:
    """The row as lines; every value in it may come from a pod, an API or a job file, so each line goes
    through the output boundary (gpujob.safe) whole: a name cannot clear the screen, write the
    clipboard or start a line of its own. Only the charts gpujob draws keep their escapes."""
    from gpujob.safe import for_terminal

    return "\n".join(
        line if isinstance(line, _Drawn) else for_terminal(line) for line in _lines(row, style, chart=chart)
    )


def _lines(row: dict, style: Style | None = None, *, chart: bool = False) -> list[str]:
    lines = [f"{row['job']} ({row['platform']}, wants {row['desired']})"]
    m = row.get("machine")
    if m is None:
        lines.append("  machine:   none")
    else:
        gpu = m.get("gpu_billed") or m["gpu"] or "-"
        lines.append(f"  machine:   {m['name']} ({m['id']}) {m['status']}, {gpu} in {m['region'] or '-'}")
        for n in m.get("nodes") or []:
            lines.append(
                f"    node {n['rank']}:  {n['name'] or n['id']} ({n['id']}) {n['status']}, "
                f"private {n['private_ip'] or '-'}, ssh {n['ssh'] or '-'}" + _node_run_text(n.get("run"))
            )
    if row.get("destroyed"):
        lines.append(f"  destroyed: {row['destroyed']}")
    if row.get("usd_per_hour") is not None:
        how = (
            "estimate from metered time" if row.get("cost_source") == "estimate" else "billed by the platform"
        )
        from gpujob.plan.costs import usd2

        where = f" on {row['platform']}" if row.get("elsewhere") or row.get("spent_elsewhere") else ""
        money = row.get("money") or {}
        spent = f"{usd2(row['cost_usd'])} spent so far"
        if money.get("parts"):  # one total, its parts labelled: the figure gpujob cost's TOTAL sums
            each = " + ".join(f"{usd2(x['usd'])} on {x['platform']}" for x in money["parts"])
            spent = f"{usd2(money['spent_usd'])} spent so far in all ({each})"
        lines.append(
            f"  cost:      {usd2(row['usd_per_hour'])}/h now (every resource of the job{where}), "
            f"{spent} ({how}; details: gpujob cost)"
        )
        if row.get("billing_now"):
            # meter by meter, so a stopped pod's volume disk shows its stopped (2×) rate, not $0.00/h
            parts = [f"{x['what']} {usd2(x['usd_per_hour'])}/h" for x in row["billing_now"]]
            lines.append(f"  billing:   {'; '.join(parts)}")
    for e in row.get("elsewhere") or []:
        from gpujob.plan.costs import usd2

        lines.append(
            f"  also on:   {e['platform']}: {', '.join(e['resources'])}; {usd2(e['cost_usd'])} spent, "
            f"{usd2(e['usd_per_hour'])}/h now; to delete it: gpujob apply --release-left (gated)"
        )
    for e in row.get("spent_elsewhere") or []:
        from gpujob.plan.costs import usd2

        lines.append(
            f"  also spent: {e['platform']}: {usd2(e['cost_usd'])} before the job left it (nothing of it is "
            "there now; gpujob cost totals both)"
        )
    if row.get("runtime_h") is not None:
        lines.append(f"  runtime:   {row['runtime_h']:.2f} h since the last start")
    if "network_volume" in row:
        nv = row["network_volume"]
        lines.append(f"  volume:    {nv['name']} ({nv['id']}) {nv['gb']} GB")
    run = row.get("run")
    if run is not None:
        if "error" in run:
            lines.append(f"  run:       unknown ({run['error']})")
            if run.get("hint"):
                lines.append(f"             hint: {run['hint']}")
        else:
            code = f", exit code {run['exit_code']}" if run.get("exit_code") is not None else ""
            note = f" ({run['note']})" if run.get("note") else ""
            ended = f": {run['ended']}" if run.get("ended") else ""
            lines.append(f"  run:       {run['state']}{code}{ended}{note}")
            if run.get("last_checkpoint"):
                age = run.get("last_checkpoint_age_s")
                lines.append(
                    f"  checkpoint: {run['last_checkpoint']} ({age:.0f}s ago)"
                    if age is not None
                    else f"  checkpoint: {run['last_checkpoint']}"
                )
            if run.get("last_log_line"):
                lines.append(f"  log:       {run['last_log_line']}")
            if run.get("disks"):
                from gpujob.disks.usage import DiskUsage

                shown = [DiskUsage(**{k: d[k] for k in ("path", "used_bytes", "total_bytes", "used_inodes",
                                                         "total_inodes")}).line() for d in run["disks"]]  # fmt: skip
                lines.append(f"  disks:     {'; '.join(shown)}")
            for w in run.get("disk_warnings") or []:
                lines.append(f"  warning:   [disk] {w}")
            for w in run.get("warnings") or []:
                lines.append(f"  warning:   [{w['code']}] {w['summary']}")
                lines.append(f"             fix: {w['fix']}")
    from gpujob.sweep.status import text as cells_text

    lines += cells_text(row)
    pull = row.get("last_pull")
    if pull is not None:
        ok = "verified" if pull["complete"] else "INCOMPLETE"
        lines.append(f"  last pull: {pull['at']:%Y-%m-%d %H:%M:%S} UTC, {pull['files']} file(s), {ok}")
    watch = row.get("watch")
    if watch is not None:
        from gpujob.watch.ledger import Goodput

        g = Goodput.model_validate(watch["goodput"])
        money = row.get("money")
        if money is None or "usd_per_hour" not in row:  # no cost figure read: watch's count is the only one
            lines.append(f"  goodput:   {g.line()}, ${g.usd:,.2f} counted by watch")
        elif "watch_usd" in money:  # one total per screen: watch's own count is named as what it is
            lines.append(
                f"  goodput:   {g.line()}; watch's ledger counted ${money['watch_usd']:,.2f} at its ticks "
                "(it lags: the cost line's figure is the cost engine's, the one gpujob cost totals)"
            )
        else:
            lines.append(f"  goodput:   {g.line()}")
        if watch["parked"]:
            lines.append(f"  parked:    {watch['parked']['reason']} (edit the job file to resume)")
        if style is not None and watch.get("series"):
            from gpujob.chart.jobs import charts

            band = row.get("forecast") if chart else None
            lines += [_Drawn(line) for line in charts(watch["series"], style, band)]
    if row.get("forecast"):
        from gpujob.cost.forecast import Forecast

        fc = Forecast.model_validate(row["forecast"])
        done = (
            f"step {fc.steps_done:,} of {fc.total_steps:,}, "
            if fc.steps_done is not None and fc.total_steps
            else ""
        )
        lines.append(f"  forecast:  {done}{fc.line()}")
        lines += [f"             {line}" for line in fc.input_lines()]
    if row.get("events"):
        from gpujob.watch.events import Event

        lines.append("  events:")
        lines += [f"    {Event.model_validate(e).line()}" for e in row["events"]]
    return lines
