"""`gpujob watch [JOBFILE...]`: keep jobs true to their files while nobody watches."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from gpujob.cli.main import run_command
from gpujob.cli.options import accepts_no_color, lock_timeout_option

HELP = """Keep each job what its file says, unattended: a level-triggered reconcile loop.

\b
Every tick reads live state and the run, plans like `gpujob plan`, and applies the fixes that destroy
nothing: start a preempted or stopped machine, create a missing one (falling back along machine.gpu,
regions and cloud within max_price_per_hour), replace a pod whose host lost its GPU (RP1) when only
its container disk goes with it, relaunch a lost run from its newest checkpoint. Anything else that
is irreversible waits for your --approve ID, except teardown.on_finish, which the file declares and
which still passes the whole teardown gate. With checkpoint.pull: continuous, new checkpoints are
pulled and verified as they appear.

\b
A job with fallback: entries moves to the next platform that can serve it when its own cannot (no
GPU it accepts in stock under its price cap, its spot API gone, or failover_after failed starts),
carrying its newest checkpoint verified here. The file's failover: says how: auto moves at once; ask
(the default) prints the approval line once and waits for a watch started with --approve <job>.move;
never waits for its platform. A move destroys nothing (docs/failover.md).

\b
Limits park a job (checkpoints pulled, the machine stopped, or terminated when on_finish says so):
run.max_runtime, budget.max_total_usd (money so far plus the burn until the next check) and
--max-recoveries-per-hour. A parked job is watched again once its file changes.

\b
A sweep (docs/sweeps.md) is watched queue by queue, each queue machine like a job: recovered when
preempted, its cells pulled into outputs.pull_to/<cell>/ and the machine stopped once its queue drains.

\b
Events: one line each on stdout and in events.jsonl of gpujob's state; --notify URL also posts them as JSON
(Slack-compatible `text`). One watcher per job: the job's lock is held for the watcher's lifetime.

\b
Exit codes: 0 healthy (or every run finished) · 2 --once recovered something · 3 needs a human
(an approval, a failed run, a limit) · 1 an error (a fix or a read failed; running again retries).

\b
Examples:
  gpujob watch                                   every job file here, until the runs finish
  gpujob watch job.yaml --once                   one tick, for cron or a CI schedule
  gpujob watch --notify https://hooks.slack.com/services/...
  gpujob watch --approve bert.move               failover: ask: approve bert's move to its fallback
"""


@click.command(name="watch", help=HELP)
@click.argument("targets", nargs=-1, type=click.Path(path_type=Path))
@click.option("--once", is_flag=True, help="One tick, then exit with 0, 1, 2 or 3 (see above).")
@click.option("--interval", default="30s", show_default=True, help="Time between full ticks.")
@click.option(
    "--probe", default="2.5s", show_default=True, help="Time between cheap checks of running machines."
)
@click.option(
    "--notify",
    metavar="URL",
    envvar="GPUJOB_NOTIFY_URL",
    help="Post each event to this webhook (or set GPUJOB_NOTIFY_URL, which keeps it out of `ps`).",
)
@click.option("--approve", "approvals", multiple=True, metavar="ACTION_ID", help="Approve one gated action.")
@click.option(
    "--max-recoveries-per-hour",
    default=10,
    show_default=True,
    type=click.IntRange(1),
    help="Then park the job.",
)
@lock_timeout_option()
@accepts_no_color
def command(
    targets: tuple[Path, ...],
    once: bool,
    interval: str,
    probe: str,
    notify: str | None,
    approvals: tuple[str, ...],
    max_recoveries_per_hour: int,
    lock_timeout: float,
) -> None:
    sys.exit(
        run_command(
            _watch,
            targets,
            once,
            interval,
            probe,
            notify,
            set(approvals),
            max_recoveries_per_hour,
            lock_timeout,
        )
    )


def _seconds(option: str, value: str) -> float:
    from gpujob.errors import ConfigError
    from gpujob.jobfile.rules import parse_duration

    try:
        return parse_duration(value, minimum_s=0).total_seconds()
    except ValueError as exc:
        raise ConfigError(f"--{option}: {exc}") from None


def _watch(
    targets: tuple[Path, ...],
    once: bool,
    interval: str,
    probe: str,
    notify: str | None,
    approvals: set[str],
    max_recoveries_per_hour: int,
    lock_timeout: float = 0.0,
) -> int:
    import asyncio
    import os
    import shlex
    import signal

    from gpujob.cli import session
    from gpujob.spec.load import load_specs, resolve_job_files
    from gpujob.watch.jobs import Options

    opts = Options(
        interval_s=_seconds("interval", interval),
        probe_s=_seconds("probe", probe),
        once=once,
        approvals=approvals,
        max_recoveries_per_hour=max_recoveries_per_hour,
        rerun=shlex.join(["gpujob", "watch", *map(str, targets), *(["--once"] if once else [])]),
    )
    paths = resolve_job_files(list(targets), command="watch")
    loaded = load_specs(paths)
    jobs = [(ls.path, ls.spec.name, session.state_dir_of(ls.path)) for ls in loaded]
    command_line = " ".join(["gpujob watch", *map(str, targets)] + (["--once"] if once else []))
    from gpujob.failover.entries import platforms_of

    with session.locked(loaded, command_line, timeout=lock_timeout):
        loop = asyncio.new_event_loop()
        try:
            main = loop.create_task(
                _run(jobs, platforms_of(ls.spec for ls in loaded), opts, notify, dict(os.environ))
            )
            loop.add_signal_handler(signal.SIGTERM, main.cancel)
            try:
                return loop.run_until_complete(main)
            except (KeyboardInterrupt, asyncio.CancelledError):
                main.cancel()
                with _suppress():
                    loop.run_until_complete(main)
                click.echo(
                    "watch stopped; its journal and ledger are kept, and the next watch converges from them",
                    err=True,
                )
                return 130
        finally:
            loop.close()


async def _run(jobs, platforms, opts, notify, env):  # type: ignore[no-untyped-def]
    from gpujob.apply.sshapi import SSHApi
    from gpujob.cli.wiring import capabilities
    from gpujob.clock import SystemClock
    from gpujob.providers.registry import open_providers
    from gpujob.watch.events import append_event
    from gpujob.watch.loop import Watcher
    from gpujob.watch.notify import Notifier

    clock = SystemClock()
    notifier = Notifier(notify, clock=clock, warn=lambda text: click.echo(text, err=True)) if notify else None

    def emit(event, state_dir):  # type: ignore[no-untyped-def]
        click.echo(event.line())
        append_event(state_dir, event)
        if notifier is not None:
            notifier.send(event)

    try:
        async with open_providers(platforms) as providers:
            watcher = Watcher(jobs, providers, clock=clock, ssh=SSHApi.default(), env=env, emit=emit,
                              options=opts, capabilities=capabilities())  # fmt: skip
            try:
                return await watcher.run()
            finally:
                watcher.say(None, "watch-stop", "watch ended")
    finally:
        if notifier is not None:
            await notifier.aclose()


class _suppress:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> bool:
        return True
