"""`gpujob destroy [JOBFILE...]`: plan the teardown of a job (desired state absent) through the gate."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from gpujob.cli.main import run_command
from gpujob.cli.options import gated_run_options

HELP = """Tear a job down: pull and verify checkpoints, then terminate, delete volumes, release IPs.

\b
Same as setting `state: absent` and applying. Every irreversible step passes the teardown gate:
its checkpoints pulled to checkpoint.pull_to, each verified by checkpoint.verify with a matching
checksum, and its exact id approved (--approve ID or typed at the prompt). A job with `fallback:`
entries is torn down on every platform it has anything on, in one plan: what it holds where it does
not run now has its own ids, <job>.left.<platform>.<resource>.<kind>, each gated the same way.

\b
Examples:
  gpujob destroy                                        show the teardown plan and what it needs
  gpujob destroy --approve toy.pod.terminate --approve toy.network_volume.delete-volume
  gpujob destroy --approve bert.machine.terminate --approve bert.left.runpod.network_volume.delete-volume
  gpujob destroy --approve abl.q1.pod.terminate --approve abl.q2.pod.terminate --approve abl.q1.network_volume.delete-volume
                                                        a sweep: every queue's pod, then the volume they share
"""


@click.command(name="destroy", help=HELP)
@gated_run_options("Do not ask before ordinary steps (the pull).")
def command(
    targets: tuple[Path, ...],
    auto_approve: bool,
    approvals: tuple[str, ...],
    no_color: bool,
    lock_timeout: float,
) -> None:
    from gpujob.cli.cmd_apply import run

    sys.exit(
        run_command(
            run,
            targets,
            auto_approve,
            set(approvals),
            no_color,
            "gpujob destroy",
            destroy=True,
            lock_timeout=lock_timeout,
        )
    )
