"""`gpujob restart JOB`: relaunch a job's run (`gpujob apply --replace JOB.run` for one job)."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from gpujob.cli.main import run_command

HELP = """Relaunch a job's run with its job file as it is: SIGTERM and the grace for its final save, a
final pull when checkpoint.pull is continuous, then the run starts again and resumes from its newest
checkpoint. The short form of `gpujob apply --replace JOB.run` (the plan is shown first).

\b
Examples:
  gpujob restart bert
  gpujob restart bert --auto-approve -f jobs/bert.yaml
  gpujob restart abl.q1                  one queue of sweep abl (abl: every queue)
"""


@click.command(name="restart", help=HELP)
@click.argument("job")
@click.option("-f", "--file", "job_file", type=click.Path(path_type=Path, dir_okay=False),
              help="The job file; default: the discovered job file of that name.")  # fmt: skip
@click.option("--auto-approve", is_flag=True, help="Do not ask before the relaunch.")
@click.option("--no-color", is_flag=True, help="Plain output.")
def command(job: str, job_file: Path | None, auto_approve: bool, no_color: bool) -> None:
    sys.exit(run_command(_run, job, job_file, auto_approve, no_color))


def _run(job: str, job_file: Path | None, auto_approve: bool, no_color: bool) -> int:
    from gpujob.cli.cmd_apply import run
    from gpujob.cli.cmd_lock import _find_job_file
    from gpujob.errors import GpujobError

    path = job_file or _find_job_file(job)
    if path is None:
        raise GpujobError(
            f"no job file here defines job '{job}'",
            hint="run it where the job file is, or name it: `gpujob restart JOB -f path/to/job.yaml`",
        )
    return run((path,), auto_approve, set(), no_color, "gpujob apply", destroy=False, replace=(f"{job}.run",))
