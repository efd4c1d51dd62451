"""End-to-end helpers: the real simulator (real sshd pods, real files, real processes) and the
`gpujob` CLI run in a copy of examples/quickstart (in this process, or as a real one: tests/cli_process.py).

These tests never skip: when the simulator cannot run its pods here, they fail and say why.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gpujob import naming
from gpujob.sim.testing import Sim
from tests.cli_process import invoke, run_gpujob

QUICKSTART = Path(__file__).resolve().parents[2] / "examples" / "quickstart"
CANARY = "gpujob_CANARY_5e1f0c7d9b"
CANARY_NAME = "E2E_CANARY_TOKEN"


@dataclass
class Project:
    """A quickstart copy plus a runner for the gpujob CLI that keeps every byte it printed."""

    dir: Path
    env: dict[str, str]
    sim: Sim
    outputs: list[str] = field(default_factory=list)

    def gj(
        self, *args: str, check: bool = True, timeout: float = 180, process: bool = False
    ) -> subprocess.CompletedProcess[str]:
        """`gpujob <args>` in the project: in this process unless `process` (tests/cli_process.py says
        when a test needs a real one; `timeout` bounds only a real one)."""
        return self._kept(
            args, run_gpujob(args, cwd=self.dir, env=self.env, timeout=timeout, process=process), check
        )

    def popen(
        self, *args: str, extra_env: dict[str, str] | None = None, split: bool = False
    ) -> subprocess.Popen[str]:
        """A gpujob process; its stderr joins its stdout (a log to read in order) unless `split`, for a
        caller that reads stdout as a script would: JSON or the command's own lines, stderr apart."""
        return subprocess.Popen(
            [sys.executable, "-m", "gpujob", *args],
            cwd=self.dir,
            env={**self.env, **(extra_env or {})},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE if split else subprocess.STDOUT,
            text=True,
        )

    @property
    def state(self) -> Path:
        return self.dir / ".gpujob"

    def store(self) -> Any:
        """The project's state store as gpujob itself would open it with this environment."""
        from gpujob.state.config import open_config, resolve

        return open_config(resolve(self.dir / "job.yaml", env=self.env))

    def record(self, name: str) -> dict[str, Any]:
        """A JSON document of the state (e.g. pulls/quickstart.json), from whichever store is in use."""
        data = self.store().read(name)
        assert data is not None, f"no {name} in {self.store().location}"
        return dict(json.loads(data))

    @property
    def project_id(self) -> str:
        """The id gpujob made for this checkout on its first plan or apply (project.json in its state)."""
        return str(self.record("project.json")["id"])

    def machine_name(self, job: str = "quickstart") -> str:
        return naming.machine_name(job, self.project_id)

    def volume_name(self, job: str = "quickstart", volume: str = "ckpts") -> str:
        return naming.volume_name(job, volume, self.project_id)

    def journal(self) -> list[dict[str, Any]]:
        out = []
        for line in self.store().lines("journal/quickstart.jsonl"):
            try:
                out.append(json.loads(line))
            except ValueError:
                continue
        return out

    def status(self) -> dict[str, Any]:
        """What `gpujob status --format json` reports, read in this process (in_process): the same
        command over the same HTTP and SSH, without an interpreter start; the polls call it most."""
        return json.loads(self.in_process("status", "--format", "json").stdout)[0]

    def in_process(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        """The gpujob CLI run in this process, whatever GPUJOB_TESTS_IN_PROCESS says (tests/cli_process.py):
        the polls call it most."""
        return self._kept(args, invoke(args, cwd=self.dir, env=self.env), check)

    def _kept(
        self, args: tuple[str, ...], proc: subprocess.CompletedProcess[str], check: bool
    ) -> subprocess.CompletedProcess[str]:
        """Every byte the command printed kept; a failed command is the test's failure when `check`."""
        self.outputs += [proc.stdout, proc.stderr]
        if check and proc.returncode != 0:
            raise AssertionError(
                f"gpujob {' '.join(args)} exited {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
            )
        return proc

    def sim_objects(self, kind: str) -> list[dict[str, Any]]:
        """Every pod / volume the simulator ever held (terminated ones included)."""
        return list(self.sim.control("state")[kind].values())

    def live(self, kind: str) -> list[dict[str, Any]]:
        return [
            o for o in self.sim_objects(kind) if o.get("ended_at") is None and o.get("status") != "TERMINATED"
        ]


def poll(what: str, check: Callable[[], Any], deadline_s: float = 90, every: float = 0.2) -> Any:
    """Poll with a deadline (no blind sleeps). `every` is short: most checks run a gpujob command, which
    takes longer than the pause, so the pause is idle time the test does not need."""
    end = time.monotonic() + deadline_s
    last: Any = None
    while time.monotonic() < end:
        last = check()
        if last:
            return last
        time.sleep(every)
    raise AssertionError(f"timed out after {deadline_s}s waiting for {what} (last: {last!r})")
