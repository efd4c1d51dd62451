"""checkpoint.verify: the user's local load check, run on each pulled checkpoint.

The checkpoint's path is remote-controlled text (a pod names its files), so it never becomes shell
text. The command runs under `/bin/sh -c` with the path in the environment variable
GPUJOB_CHECKPOINT_FILE (and as `$1`); every `{file}` in the command is rewritten to a quoted reference
to that variable, chosen by where the placeholder stands:

  python3 v.py {file}        ->  python3 v.py "$GPUJOB_CHECKPOINT_FILE"
  python3 v.py "{file}"      ->  python3 v.py "${GPUJOB_CHECKPOINT_FILE}"
  python3 v.py '{file}'      ->  python3 v.py "$GPUJOB_CHECKPOINT_FILE"
  sh -c 'load {file}'        ->  sh -c 'load "$GPUJOB_CHECKPOINT_FILE"'   (the inner shell expands it)

A parameter expansion's value is never parsed as code, so a file named `x$(touch PWNED)` is just a
name. A command without `{file}` can read the variable itself.

What a failed check printed is kept as a bounded tail of its stderr (its stdout when stderr is empty),
with control characters written out visibly: it reaches a terminal, and the checkpoint it read came
from the machine.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
from pathlib import Path

ENV = "GPUJOB_CHECKPOINT_FILE"
PLACEHOLDER = "{file}"
OUTPUT_MAX = 4096  # characters of the tail kept
OUTPUT_LINES = 20  # lines of the tail kept


def shell_text(template: str) -> str:
    """The verify command with every `{file}` replaced by a quoted reference to $GPUJOB_CHECKPOINT_FILE."""
    out: list[str] = []
    state = "plain"  # plain | single | double
    i, n = 0, len(template)
    while i < n:
        if template.startswith(PLACEHOLDER, i):
            if state == "plain":
                out.append(f'"${ENV}"')
            elif state == "double":
                out.append(f"${{{ENV}}}")
            elif out and out[-1] == "'" and template.startswith("'", i + len(PLACEHOLDER)):
                out[-1] = f'"${ENV}"'  # '{file}' as a whole word: the quotes go with the placeholder
                i += len(PLACEHOLDER) + 1
                state = "plain"
                continue
            else:
                out.append(f'"${ENV}"')  # code for an inner shell, which expands the variable itself
            i += len(PLACEHOLDER)
            continue
        c = template[i]
        if state == "plain":
            if c == "\\" and i + 1 < n:
                out.append(template[i : i + 2])
                i += 2
                continue
            state = {"'": "single", '"': "double"}.get(c, "plain")
        elif state == "double":
            if c == "\\" and i + 1 < n:
                out.append(template[i : i + 2])
                i += 2
                continue
            if c == '"':
                state = "plain"
        elif c == "'":
            state = "plain"
        out.append(c)
        i += 1
    return "".join(out)


def _argv(template: str, path: Path) -> list[str]:
    return ["/bin/sh", "-c", shell_text(template), "gpujob-verify", str(path)]


def _env(path: Path) -> dict[str, str]:
    return {**os.environ, ENV: str(path)}


def visible(text: str) -> str:
    from gpujob.render.safe import for_terminal

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
    done = subprocess.run(
        _argv(template, path),
        env=_env(path),
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        capture_output=True,
    )
    return done.returncode == 0, output_tail(done.stdout, done.stderr)


async def run_async(template: str, path: Path, cwd: Path | None = None) -> tuple[bool, str]:
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
