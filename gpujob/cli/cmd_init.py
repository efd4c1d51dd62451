"""`gpujob init`: write a starter job.yaml for a platform, and a resumable train.py + verify_ckpt.py."""

from __future__ import annotations

import re
from pathlib import Path

import click

from gpujob.cli.main import run_command

HELP = """Write a starter job: job.yaml for the platform, train.py (a minimal resumable training loop:
PyTorch when it is installed, plain Python otherwise; runs on a CPU) and verify_ckpt.py (its load
check). Existing files are left alone unless --force.

\b
Examples:
  gpujob init
  gpujob init --platform paperspace --name resnet
  gpujob init --dir jobs/bert
"""

STARTER = Path(__file__).resolve().parent.parent / "starter"


@click.command(name="init", help=HELP)
@click.option("--platform", type=click.Choice(["runpod", "paperspace"]), default="runpod", show_default=True)
@click.option("--name", help="Job name (lowercase, digits, dashes). Default: from the directory name.")
@click.option(
    "--dir",
    "where",
    type=click.Path(path_type=Path),
    default=Path("."),
    help="Where to write (default: here).",
)
@click.option("--force", is_flag=True, help="Overwrite existing files.")
def command(platform: str, name: str | None, where: Path, force: bool) -> None:
    run_command(_init, platform, name, where, force)


def _again(platform: str, name: str, where: Path, force: bool) -> list[str]:
    """This init's command line with `name` (and --force) as given, for hints."""
    words = ["gpujob", "init", "--platform", platform, "--name", name]
    words += [] if where == Path(".") else ["--dir", str(where)]
    return words + (["--force"] if force else [])


def job_name(raw: str) -> str:
    """A valid job name from a directory name: lowercase, [a-z0-9-], starting with a letter."""
    name = re.sub(r"[^a-z0-9-]+", "-", raw.lower()).strip("-")
    name = re.sub(r"-{2,}", "-", name)
    if not name or not name[0].isalpha():
        name = f"job-{name}".rstrip("-") if name else "my-job"
    return name[:39].rstrip("-")


def _schema_line() -> str:
    here = Path(__file__).resolve().parent.parent
    for candidate in (
        here.parent / "schemas" / "job.schema.json",
        here / "_data" / "schemas" / "job.schema.json",
    ):
        if candidate.exists():
            return f"# yaml-language-server: $schema={candidate}\n"
    return ""


def _init(platform: str, name: str | None, where: Path, force: bool) -> None:
    from gpujob.errors import GpujobError, command_text
    from gpujob.spec.model import NAME_PATTERN

    name = name or job_name(where.resolve().name)
    if not re.match(NAME_PATTERN, name):
        raise GpujobError(
            f"--name {name!r}: a job name is lowercase letters, digits and dashes, starting with a letter (max 39)",
            hint=f"a valid one: {command_text(*_again(platform, job_name(name), where, force))}",
        )
    job = (STARTER / f"job-{platform}.yaml").read_text().replace("__NAME__", name)
    files = {
        "job.yaml": job.replace("__SCHEMA__", _schema_line()),
        "train.py": (STARTER / "train.py").read_text(),
        "verify_ckpt.py": (STARTER / "verify_ckpt.py").read_text(),
    }
    existing = [f for f in files if (where / f).exists()]
    if existing and not force:
        raise GpujobError(
            f"{', '.join(str(where / f) for f in existing)} already exist(s); nothing was written",
            hint=f"{command_text(*_again(platform, name, where, True))} overwrites them, or pick another "
            "directory with --dir",
        )
    where.mkdir(parents=True, exist_ok=True)
    for fname, text in files.items():
        (where / fname).write_text(text)
        click.echo(f"wrote {where / fname}")
    cd = "" if where.resolve() == Path.cwd() else f"  cd {where}\n"
    click.echo(
        f"\nNext, without an account (the local simulator):\n{cd}"
        "  gpujob validate\n"
        '  gpujob sim up && eval "$(gpujob sim env)" && gpujob plan\n'
        "  gpujob apply --auto-approve\n"
        '\ntrain.py keeps the job contract: README, "Your job\'s side of the contract".'
    )
