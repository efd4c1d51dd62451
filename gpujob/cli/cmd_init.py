"""`gpujob init`: write a starter job.yaml for a platform, and a resumable train.py + verify_ckpt.py."""

from __future__ import annotations

import os
import re
from pathlib import Path

import click

from gpujob.cli.main import run_command

HELP = """Write a starter job: job.yaml for the platform, train.py (a minimal resumable training loop:
PyTorch when it is installed, plain Python otherwise; runs on a CPU) and verify_ckpt.py (its load
check). Existing files are left alone unless --force. Adds .gpujob/ (gpujob's state, with the
project's private SSH key), checkpoints/ and outputs/ to .gitignore: appended, never rewritten.

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


# Where a released gpujob's schema is published, by version: what a job file outside gpujob's own
# checkout points at (an installed package's copy lives at a path that differs on every machine).
SCHEMA_URL = "https://raw.githubusercontent.com/gpujob/gpujob/v{version}/schemas/job.schema.json"
# What a team must not commit: gpujob's state (the project's private SSH key), pulled checkpoints, outputs.
IGNORED = (".gpujob/", "checkpoints/", "outputs/")


def _repo_root(where: Path) -> Path | None:
    for d in (where, *where.parents):
        if (d / ".git").exists():
            return d
    return None


def _schema_line(where: Path) -> str:
    """The editor's schema comment: a path relative to the job file when the schema is in the same
    repository (gpujob's own checkout), else the published schema of this version."""
    from gpujob import __version__

    schema = Path(__file__).resolve().parent.parent.parent / "schemas" / "job.schema.json"
    here = where.resolve()
    root = _repo_root(here)
    if schema.exists() and root is not None and schema.is_relative_to(root):
        ref = Path(os.path.relpath(schema, here)).as_posix()
    else:
        ref = SCHEMA_URL.format(version=__version__)
    return f"# yaml-language-server: $schema={ref}\n"


def _ignore(where: Path) -> str:
    """Append what is missing of IGNORED to where/.gitignore (never rewriting a line); what it did."""
    path = where / ".gitignore"
    if path.is_symlink():
        return f"left {path} alone (a symlink): add {' '.join(IGNORED)} to your .gitignore yourself"
    text = path.read_text() if path.exists() else ""
    have = {line.strip().lstrip("/").rstrip("/") for line in text.splitlines()}
    missing = [entry for entry in IGNORED if entry.rstrip("/") not in have]
    if not missing:
        return f"{path} already ignores {' '.join(IGNORED)}"
    lead = "\n" if text and not text.endswith("\n") else ""
    block = lead + ("\n" if text else "") + "# gpujob: state (holds the project's SSH key), pulled data\n"
    with open(path, "a") as f:  # append: whatever the file says stays as it was
        f.write(block + "".join(f"{entry}\n" for entry in missing))
    return f"{'added' if text else 'wrote'} {' '.join(missing)} to {path}"


def _init(platform: str, name: str | None, where: Path, force: bool) -> None:
    from gpujob.errors import GpujobError, command_text
    from gpujob.jobfile.model import NAME_PATTERN

    name = name or job_name(where.resolve().name)
    if not re.match(NAME_PATTERN, name):
        raise GpujobError(
            f"--name {name!r}: a job name is lowercase letters, digits and dashes, starting with a letter (max 39)",
            hint=f"a valid one: {command_text(*_again(platform, job_name(name), where, force))}",
        )
    job = (STARTER / f"job-{platform}.yaml").read_text().replace("__NAME__", name)
    files = {
        "job.yaml": job.replace("__SCHEMA__", _schema_line(where)),
        "train.py": (STARTER / "train.py").read_text(),
        "verify_ckpt.py": (STARTER / "verify_ckpt.py").read_text(),
    }
    links = [f for f in files if (where / f).is_symlink()]
    if links:  # dangling or not, a link would make init write outside its folder: never through one
        raise GpujobError(
            f"{', '.join(str(where / f) for f in links)} is a symbolic link; init writes no file through "
            "one (even with --force); nothing was written",
            hint="remove the link, or pick another directory with --dir",
        )
    existing = [f for f in files if (where / f).exists()]
    if existing and not force:
        raise GpujobError(
            f"{', '.join(str(where / f) for f in existing)} already exist(s); nothing was written",
            hint=f"{command_text(*_again(platform, name, where, True))} overwrites them, or pick another "
            "directory with --dir",
        )
    where.mkdir(parents=True, exist_ok=True)
    for fname, text in files.items():
        _write_no_follow(where / fname, text)
        click.echo(f"wrote {where / fname}")
    click.echo(_ignore(where))
    cd = "" if where.resolve() == Path.cwd() else f"  cd {where}\n"
    click.echo(
        f"\nNext, without an account (the local simulator):\n{cd}"
        "  gpujob validate\n"
        '  gpujob sim up && eval "$(gpujob sim env)" && gpujob plan\n'
        "  gpujob apply --auto-approve\n"
        '\ntrain.py keeps the job contract: docs/job-file.md, "Your job\'s side of the contract".'
    )


def _write_no_follow(path: Path, text: str) -> None:
    """Write `path`, refusing a symbolic link that appeared since the check (O_NOFOLLOW)."""
    import os

    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o644)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(text)
