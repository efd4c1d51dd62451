"""One way for tests to run the gpujob CLI: in this process by default, a real `python -m gpujob` process
where the process itself is what a test is about (issue #36).

Starting an interpreter and importing gpujob's stack costs about a second a command on the 2-core CI
machine, and the e2e tests run over a thousand commands: most of the suite's time was spent starting
processes, not in what they proved. In process, a command is click's CliRunner on the real `cli`, in the
given directory with exactly the given environment, over the same HTTP to the same simulator and the same
SSH to the same sshd: everything a command prints and does is the same, only the interpreter start is not
paid again.

A real process is kept where a test is about one: a crash hook that kills it (GPUJOB_TEST_CRASHPOINT), a
timeout the test relies on, signals, a process left running (`popen`), the bytes stdout and stderr carry
as a script reads them. `process=True` asks for one, and GPUJOB_TESTS_IN_PROCESS=0 makes every command a
process again (to check the suite does not depend on running in process).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import warnings
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

# Environment that only a real process honours: the crash hook ends the process with os._exit.
PROCESS_ONLY_ENV = ("GPUJOB_TEST_CRASHPOINT",)
# Commands that become another program: `gpujob ssh` execs OpenSSH in its own place.
PROCESS_ONLY_COMMANDS = ("ssh",)
# What gpujob keeps for the life of a process (module-level dicts): a fresh process starts with them
# empty, so each in-process command does too. (module, attribute)
PROCESS_CACHES = (
    ("gpujob.naming", "_FORGOTTEN"),
    ("gpujob.naming", "_ADOPTED"),
    ("gpujob.state.config", "_STORES"),
    ("gpujob.failover.watching", "_next_try"),
    ("gpujob.providers.notice", "ANNOUNCED"),
    ("gpujob.state.scratch", "_held"),
)
_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT)


def needs_a_process(args: Sequence[str], env: Mapping[str, str]) -> bool:
    """Whether the command only works as a process of its own (see the module doc)."""
    command = next((a for a in args if not a.startswith("-")), "")
    return command in PROCESS_ONLY_COMMANDS or any(env.get(k) for k in PROCESS_ONLY_ENV)


def run_gpujob(
    args: Sequence[str],
    *,
    cwd: Path,
    env: Mapping[str, str],
    timeout: float | None = None,
    process: bool = False,
    stdin: str | None = None,
) -> subprocess.CompletedProcess[str]:
    """`gpujob <args>` in `cwd` with exactly `env`; what it printed and its exit code."""
    all_processes = os.environ.get("GPUJOB_TESTS_IN_PROCESS", "1") == "0"
    if process or all_processes or needs_a_process(args, env):
        return subprocess.run(
            [sys.executable, "-m", "gpujob", *args],
            cwd=cwd,
            env=dict(env),
            input=stdin,
            stdin=None if stdin is not None else subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    return invoke(args, cwd=cwd, env=env, stdin=stdin)


def invoke(
    args: Sequence[str], *, cwd: Path, env: Mapping[str, str], stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    from click.testing import CliRunner

    from gpujob.cli.main import cli

    if needs_a_process(args, env):
        raise AssertionError(
            f"gpujob {' '.join(args)} cannot run in this process: it needs a process of its own"
        )
    with _as_a_process_would(cwd, env):
        result = CliRunner().invoke(cli, list(args), input=stdin, prog_name="gpujob", catch_exceptions=True)
    stderr = result.stderr
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        # What the interpreter prints for an exception nobody caught, as `python -m gpujob` would.
        import traceback

        assert result.exc_info is not None
        stderr += "".join(traceback.format_exception(*result.exc_info))
    return subprocess.CompletedProcess(["gpujob", *args], result.exit_code, result.stdout, stderr)


@contextlib.contextmanager
def _as_a_process_would(cwd: Path, env: Mapping[str, str]) -> Iterator[None]:
    """The command's view of the process (environment, directory, signal handlers, warning filters) is
    the one a fresh process would have; the test's own is back afterwards."""
    saved_env, saved_cwd = dict(os.environ), os.getcwd()
    saved_signals = {s: signal.getsignal(s) for s in _SIGNALS}
    _forget_process_caches()
    os.environ.clear()
    os.environ.update(env)
    os.chdir(cwd)
    try:
        with warnings.catch_warnings():
            yield
    finally:
        os.chdir(saved_cwd)
        os.environ.clear()
        os.environ.update(saved_env)
        for s, handler in saved_signals.items():
            if handler is not None:
                signal.signal(s, handler)


def _forget_process_caches() -> None:
    for module, name in PROCESS_CACHES:
        loaded = sys.modules.get(module)
        if loaded is None:
            continue  # not imported yet: nothing kept
        # A renamed cache would quietly leak from one command into the next: say so instead.
        assert hasattr(loaded, name), (
            f"{module}.{name} is gone: update PROCESS_CACHES in tests/cli_process.py"
        )
        getattr(loaded, name).clear()
