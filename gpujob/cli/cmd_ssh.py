"""`gpujob ssh [JOBFILE]`: a shell on the job's machine with the project key and the pinned host key."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from gpujob.cli.main import run_command

HELP = """Open a shell on the job's machine (the ssh binary, the project key, the pinned host key:
StrictHostKeyChecking stays on). --print prints the command instead.

\b
Examples:
  gpujob ssh
  gpujob ssh --print
  gpujob ssh -- nvidia-smi
  gpujob ssh -f jobs/bert.yaml
"""


@click.command(name="ssh", help=HELP)
@click.option(
    "-f", "--file", "target", type=click.Path(path_type=Path), help="The job file (default: the one here)."
)
@click.argument("remote_command", nargs=-1)
@click.option("--print", "print_only", is_flag=True, help="Print the ssh command instead of running it.")
def command(target: Path | None, remote_command: tuple[str, ...], print_only: bool) -> None:
    sys.exit(run_command(_ssh, target, remote_command, print_only))


def _ssh(target: Path | None, remote_command: tuple[str, ...], print_only: bool) -> int:
    import asyncio
    import os
    import shlex

    from gpujob.errors import GpujobError
    from gpujob.spec.load import load_specs, resolve_job_files

    loaded = load_specs(resolve_job_files([target] if target else [], command="ssh"))
    if len(loaded) != 1:
        raise GpujobError(f"ssh needs one job; {len(loaded)} job files found", hint="name the job file")
    argv, local = asyncio.run(_argv(loaded))
    argv += list(remote_command)
    if print_only:
        click.echo(shlex.join(argv))
        if not local:
            click.echo(
                "note: the key file above exists only while gpujob runs (the state is in a database); "
                "use `gpujob ssh` itself to connect",
                err=True,
            )
        return 0
    if local:
        os.execvp(argv[0], argv)
    # The key came from a database store into a temp file that must go when gpujob exits: run ssh as a
    # child instead of replacing this process. Ctrl-C reaches ssh from the terminal too: ssh decides.
    import subprocess

    child = subprocess.Popen(argv)
    while True:
        try:
            return child.wait()
        except KeyboardInterrupt:
            continue


async def _argv(loaded):  # type: ignore[no-untyped-def]
    from gpujob.apply.observe import job_views, known_hosts_line
    from gpujob.apply.runtime import open_remote, wait_for_endpoint
    from gpujob.apply.sshapi import SSHApi
    from gpujob.clock import SystemClock
    from gpujob.errors import GpujobError
    from gpujob.state.local import LocalStore

    ssh, clock = SSHApi.default(), SystemClock()
    async with job_views(loaded) as views:
        view = views[0]
        target = view.target()
        endpoint = await wait_for_endpoint(target, clock, lambda m: click.echo(m, err=True))
        store = view.state_dir
        line = known_hosts_line(store, target.resource.id, endpoint.host, endpoint.port)
        if line is None:  # pin on first use through asyncssh, exactly as apply does
            async with open_remote(target, ssh, clock, lambda m: click.echo(m, err=True)) as remote:
                await remote.run("true")
            line = known_hosts_line(store, target.resource.id, endpoint.host, endpoint.port)
        if line is None:
            raise GpujobError(f"no pinned host key for {target.resource.id}")
        known = store.scratch_dir() / "ssh_known_hosts"
        known.write_text(line + "\n")
        known.chmod(0o600)
        key_path, _ = ssh.ensure_project_key(store)
        from gpujob.state.scratch import on_disk

        key_path = on_disk(key_path)  # OpenSSH reads a file: written now, removed when gpujob exits
    return [
        "ssh", "-i", str(key_path), "-p", str(endpoint.port),
        "-o", "IdentitiesOnly=yes", "-o", "StrictHostKeyChecking=yes", "-o", f"UserKnownHostsFile={known}",
        f"{endpoint.user}@{endpoint.host}",
    ], isinstance(store, LocalStore)  # fmt: skip
