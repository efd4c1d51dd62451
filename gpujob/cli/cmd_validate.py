"""`gpujob validate [PATH...]`: check job files and report every problem at once."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from gpujob.cli.main import run_command
from gpujob.cli.options import accepts_no_color

if TYPE_CHECKING:
    from gpujob.spec.problem import SpecProblem


def _targets(paths: tuple[str, ...]) -> list[Path]:
    from gpujob.errors import GpujobError
    from gpujob.spec.files import discover_job_files, no_job_files_hint

    if not paths:
        found = discover_job_files(Path.cwd())
        if not found:
            raise GpujobError(
                "no job files found here (job.yaml, *.job.yaml or jobs/*.yaml)",
                hint=no_job_files_hint("validate"),
            )
        return [p.relative_to(Path.cwd()) for p in found]
    out: list[Path] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            inside = discover_job_files(path)
            if not inside:
                raise GpujobError(
                    f"{raw}: no job files in this directory (job.yaml, *.job.yaml or jobs/*.yaml)"
                )
            out += inside
        else:
            out.append(path)  # a missing file is reported as a problem like any other
    return out


def _problems(files: list[Path]) -> list[SpecProblem]:
    """check_files' answer. Files that are certainly valid need no pydantic to say so (the fast path,
    spec.fastcheck); any doubt, and every problem, is the full loader's."""
    from gpujob.spec.fastcheck import certainly_valid

    if certainly_valid(files):
        return []
    from gpujob.spec.load import check_files

    return check_files(files)


def _validate(paths: tuple[str, ...], fmt: str) -> None:
    files = _targets(paths)
    problems = _problems(files)
    bad_files = sorted({p.file for p in problems})
    if fmt == "json":
        report = {
            "ok": not problems,
            "files": [str(f) for f in files],
            "problems": [p.to_dict() for p in problems],
        }
        click.echo(json.dumps(report, indent=2, sort_keys=True))
    else:
        for problem in problems:
            click.echo(str(problem))
        if problems:
            click.echo(f"{len(problems)} problem(s) in {len(bad_files)} file(s)")
        else:
            click.echo(f"ok: {len(files)} file(s) valid")
    if problems:
        sys.exit(1)


@click.command(name="validate")
@click.argument("paths", nargs=-1, type=click.Path(dir_okay=True, file_okay=True, path_type=str))
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "json"]),
    default="text",
    show_default=True,
    help="text: one problem per line; json: a machine-readable report.",
)
@accepts_no_color
def command(paths: tuple[str, ...], fmt: str) -> None:
    """Check job files and report every problem at once, as file:line:col: key: message.

    With no PATH: job.yaml in the current directory, or every *.job.yaml and jobs/*.yaml.
    A directory PATH is searched the same way. Exit 0 when every file is valid, 1 when not.

    \b
    Examples:
      gpujob validate
      gpujob validate examples/runpod-ondemand/job.yaml --format json
    """
    run_command(_validate, paths, fmt)
