"""`gpujob pull [JOBFILE...]`: fetch checkpoints (resumable), checksum and verify them, record it."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from gpujob.cli.main import run_command
from gpujob.cli.options import lock_timeout_option

HELP = """Pull every checkpoint of checkpoint.dir into checkpoint.pull_to, resuming partial files,
checking each SHA-256 against the remote and running checkpoint.verify on it. The record
(pulls/JOB.json in gpujob's state: .gpujob/ or the state database) is what the teardown gate reads.
A job's outputs (outputs.paths) come too, into outputs.pull_to/<path on the machine>, each checked
by SHA-256 (outputs/JOB.json). A sweep's cells come into outputs.pull_to/<cell>/, every queue's.

\b
Examples:
  gpujob pull
  gpujob pull jobs/bert.yaml
"""


@click.command(name="pull", help=HELP)
@click.argument("targets", nargs=-1, type=click.Path(path_type=Path))
@click.option("--no-color", is_flag=True, help="Plain lines, no progress bars.")
@lock_timeout_option()
def command(targets: tuple[Path, ...], no_color: bool, lock_timeout: float) -> None:
    sys.exit(run_command(_pull, targets, no_color, lock_timeout))


def _pull(targets: tuple[Path, ...], no_color: bool = False, lock_timeout: float = 0.0) -> int:
    import asyncio

    from gpujob.cli.session import locked
    from gpujob.spec.load import load_specs, resolve_job_files

    loaded = [
        ls
        for ls in load_specs(resolve_job_files(list(targets), command="pull"))
        if ls.spec.checkpoint is not None or ls.spec.outputs is not None
    ]
    if not loaded:
        click.echo("No job with a checkpoint section or outputs: nothing to pull.")
        return 0
    from gpujob.cli.progress import choose_hooks

    # Bars and spinners on a terminal; piped, a few plain lines per transfer on stderr.
    hooks = choose_hooks(no_color, lambda line: click.echo(line, err=True))
    with (
        locked(loaded, "gpujob pull", timeout=lock_timeout),
        hooks if hasattr(hooks, "__enter__") else _Nothing(),
    ):
        records, outputs = asyncio.run(_go(loaded, hooks))
    from gpujob.errors import command_text, job_file_args, ssh_words

    bad = 0
    for out in outputs:
        state = "each checked by sha256" if not out.unpullable else "INCOMPLETE"
        _say(f"{out.job}: {len(out.files)} output file(s) into {out.local_dir}: {state}")
        for path, f in sorted(out.files.items()):
            _say(f"  ✓ {path}  {f.size} B  sha256 {f.sha256[:16]}…")
        for path, why in sorted(out.unpullable.items()):
            _say(f"  ✗ {path!r}: not pullable ({why}); rename or remove it on the machine", err=True)
        bad += 1 if out.unpullable else 0

    paths = {ls.spec.name: ls.path for ls in loaded}
    for rec in records:
        state = "all verified" if rec.complete else "INCOMPLETE"
        _say(f"{rec.job}: {len(rec.files)} file(s) from {rec.remote_dir} into {rec.local_dir}: {state}")
        for f in rec.files:
            mark = (
                "✓"
                if f.verified and f.name in rec.remote_files and f.sha256 == rec.remote_files[f.name]
                else "✗"
            )
            _say(f"  {mark} {f.name}  {f.size} B  sha256 {f.sha256[:16]}…")
            if f.name in rec.remote_files and not f.verified:
                _say(f"    checkpoint.verify failed on it ({rec.verify_command}); it printed:")
                for line in (f.verify_output or "(nothing)").splitlines():
                    _say(f"    | {line}")
        for name in rec.missing():
            _say(f"  ✗ {name!r}: not pulled or checksum differs from the remote", err=True)
        for name, why in sorted(rec.unpullable.items()):
            _say(f"  ✗ {name!r}: not pullable ({why}); rename or remove it on the machine", err=True)
        if not rec.complete:
            look = command_text(*ssh_words(paths[rec.job], "ls", "-la", rec.remote_dir))
            again = command_text("gpujob", "pull", *job_file_args(paths[rec.job]))
            _say(
                f"  hint: rename or remove on the machine what is not pullable or fails checkpoint.verify "
                f"({look}), then run {again} again",
                err=True,
            )
        bad += 0 if rec.complete else 1
    return 1 if bad else 0


def _say(text: str, err: bool = False) -> None:
    """One line of the report: names and paths come from the machine, so through gpujob.safe (a name
    with a newline or an escape cannot forge a line or act on the terminal)."""
    from gpujob.safe import for_terminal

    click.echo(for_terminal(text), err=err)


async def _go(loaded, hooks):  # type: ignore[no-untyped-def]
    from gpujob.apply.observe import job_views
    from gpujob.apply.progress import JobReporter
    from gpujob.apply.runtime import pull
    from gpujob.apply.sshapi import SSHApi
    from gpujob.apply.stopped_pull import pull_view
    from gpujob.clock import SystemClock
    from gpujob.outputs.command import pull_outputs

    out, outputs = [], []
    ssh, clock = SSHApi.default(), SystemClock()
    async with job_views(loaded) as views:
        for v in views:
            note = JobReporter(hooks, v.spec.name)
            ck, got = await pull_view(
                v,
                ssh,
                clock,
                lambda t, note=note: pull(t, ssh, clock, note),
                lambda t, note=note: pull_outputs(t, ssh, clock, note),
                lambda text: _say(text, err=True),
            )
            out += [ck] if ck is not None else []
            outputs += [got] if got is not None else []
    return out, outputs


class _Nothing:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None
