"""checkpoint.verify: the user's local load check, run on each pulled checkpoint.

The command runs under `/bin/sh -c` with the checkpoint's path in GPUJOB_CHECKPOINT_FILE (and as `$1`),
never as shell text: gpujob.jobfile.verifycmd rewrites each `{file}` and refuses a placement that could
become code (validate refuses it too; a job file edited since is refused here again).

What a failed check printed is kept as a bounded tail of its stderr (its stdout when stderr is empty),
with control characters written out visibly: it reaches a terminal, and the checkpoint it read came
from the machine.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
from pathlib import Path

from gpujob.jobfile.verifycmd import ENV, SAFE_FORMS, placement_problem, shell_text

OUTPUT_MAX = 4096  # characters of the tail kept
OUTPUT_LINES = 20  # lines of the tail kept


def _argv(template: str, path: Path) -> list[str]:
    return ["/bin/sh", "-c", shell_text(template), "gpujob-verify", str(path)]


def _env(path: Path) -> dict[str, str]:
    return {**os.environ, ENV: str(path)}


def visible(text: str) -> str:
    from gpujob.safe import for_terminal

    return for_terminal(text, lines=True)


def output_tail(stdout: bytes, stderr: bytes) -> str:
    """The last OUTPUT_LINES lines (at most OUTPUT_MAX characters) of stderr, or of stdout without it."""
    raw = stderr if stderr.strip() else stdout
    lines = raw.decode("utf-8", "replace").rstrip("\n").split("\n")[-OUTPUT_LINES:]  # a \r stays in its line
    text = visible("\n".join(lines))
    return text[-OUTPUT_MAX:]


def run(template: str, path: Path, cwd: Path | None = None) -> tuple[bool, str]:
    """Run the check on one local file (from `cwd`, where the job file's relative paths point).
    Returns whether it passed and the tail of what it printed (output_tail)."""
    problem = placement_problem(template)
    if problem:  # validate refuses such a command; a job file edited since is refused here too
        return False, f"checkpoint.verify not run: {problem}; safe forms: {SAFE_FORMS}"
    done = subprocess.run(
        _argv(template, path),
        env=_env(path),
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        capture_output=True,
    )
    return done.returncode == 0, output_tail(done.stdout, done.stderr)


async def run_async(template: str, path: Path, cwd: Path | None = None) -> tuple[bool, str]:
    problem = placement_problem(template)
    if problem:
        return False, f"checkpoint.verify not run: {problem}; safe forms: {SAFE_FORMS}"
    proc = await asyncio.create_subprocess_exec(
        *_argv(template, path),
        env=_env(path),
        cwd=cwd,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await proc.communicate()
    return proc.returncode == 0, output_tail(out, err)
