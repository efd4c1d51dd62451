"""run.smoke: the job's own quick check, run on this computer before apply rents anything.

An import error or a typo found here costs nothing; found on the machine it costs the boot and the
GPU-hours until someone looks. The smoke runs on the CPU (CUDA_VISIBLE_DEVICES is empty), in the job's
sync source directory, with run.env, a temporary GPUJOB_CHECKPOINT_DIR (never checkpoint.pull_to: a
smoke's checkpoint must never be taken for the run's) and none of the secrets: not run.secrets, not
the platforms' account keys, nothing whose name says it is a credential.
"""

from __future__ import annotations

import os
import re
import subprocess
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpujob.errors import GpujobError

DEFAULT_TIMEOUT_S = 300.0
OUTPUT_LINES = 40  # the tail of the smoke's output an error shows
# Names that hold credentials by convention; never handed to a smoke even when not in run.secrets.
_CREDENTIAL = re.compile(r"(TOKEN|SECRET|PASSWORD|PASSWD|API_KEY|ACCESS_KEY|PRIVATE_KEY|CREDENTIAL)", re.I)
# Kinds of action that create or start something a smoke should precede.
STARTS = {"create", "replace", "start", "launch"}


@dataclass(frozen=True)
class SmokeResult:
    job: str
    command: str
    returncode: int | None  # None: timed out
    output: str
    seconds: float

    @property
    def ok(self) -> bool:
        return self.returncode == 0


def smoke_env(spec: Any, env: Mapping[str, str], ckpt_dir: Path) -> dict[str, str]:
    """The environment a smoke runs in: the local one minus every secret, plus run.env and gpujob's."""
    from gpujob.config import API_KEY_ENV

    run = spec.run
    drop = set(run.secrets) | set(API_KEY_ENV.values())
    out = {k: v for k, v in env.items() if k not in drop and not _CREDENTIAL.search(k)}
    out |= dict(run.env)
    ck = spec.checkpoint
    out |= {
        "GPUJOB_SMOKE": "1",
        "GPUJOB_JOB": spec.name,
        "GPUJOB_CHECKPOINT_DIR": str(ckpt_dir),
        "GPUJOB_CHECKPOINT_KEEP": str(ck.keep if ck is not None else 3),
        "GPUJOB_CHECKPOINT_INTERVAL": "60",
        "CUDA_VISIBLE_DEVICES": "",
    }
    out.pop("GPUJOB_PROGRESS_FILE", None)
    return out


def run_smoke(spec: Any, spec_path: Path, env: Mapping[str, str] | None = None) -> SmokeResult:
    """Run the job's run.smoke once and return what happened (never raises for its failure)."""
    import time

    run = spec.run
    if run is None or not run.smoke:
        from gpujob.errors import ConfigError

        raise ConfigError(f"{spec.name}: run.smoke is not set: there is no smoke command to run")
    cwd = (spec_path.parent / run.sync.src).resolve()
    timeout = run.smoke_timeout.total_seconds() if run.smoke_timeout else DEFAULT_TIMEOUT_S
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix=f"gpujob-smoke-{spec.name}-") as tmp:
        ckpt = Path(tmp) / "ckpt"
        ckpt.mkdir()
        run_env = smoke_env(spec, os.environ if env is None else env, ckpt)
        try:
            done = subprocess.run(
                ["/bin/sh", "-c", run.smoke],
                cwd=cwd,
                env=run_env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                timeout=timeout,
                start_new_session=True,
            )
            code: int | None = done.returncode
            output = done.stdout.decode(errors="replace")
        except subprocess.TimeoutExpired as exc:
            code = None
            raw = exc.stdout or b""
            output = raw.decode(errors="replace") if isinstance(raw, bytes) else str(raw)
    return SmokeResult(spec.name, run.smoke, code, output, time.monotonic() - started)


def wanted(plan: Any, job: str) -> bool:
    """A smoke precedes an apply that creates, starts or launches the job's machine or run."""
    return any(a.job == job and a.kind.value in STARTS and a.resource_kind != "network_volume"
               for a in plan.all_actions())  # fmt: skip


def smoke_before_apply(plan: Any, loaded: Sequence[Any], note: Any = None) -> list[SmokeResult]:
    """Every job's smoke whose plan starts something, in order; the first failure raises, naming the job
    and showing the smoke's output, before anything was created."""
    results: list[SmokeResult] = []
    for ls in _with_smoke(loaded):
        if not wanted(plan, ls.spec.name):
            continue
        if note is not None:
            note(ls.spec.name, f"smoke: {ls.spec.run.smoke}")
        result = run_smoke(ls.spec, ls.path)
        results.append(result)
        if not result.ok:
            raise _failed(result, ls.path)
        if note is not None:
            note(ls.spec.name, f"smoke passed in {result.seconds:.1f}s")
    return results


def _with_smoke(loaded: Iterable[Any]) -> list[Any]:
    return [ls for ls in loaded if ls.spec.run is not None and ls.spec.run.smoke]


def _failed(result: SmokeResult, path: Path) -> GpujobError:
    from gpujob.redact import from_machine

    tail = "\n".join(result.output.rstrip().splitlines()[-OUTPUT_LINES:])
    why = "timed out" if result.returncode is None else f"exited {result.returncode}"
    body = "\n".join("    " + line for line in from_machine(tail).splitlines()) or "    (no output)"
    return GpujobError(
        f"{result.job}: run.smoke {why} after {result.seconds:.1f}s; nothing was created or started\n"
        f"  $ {result.command}\n{body}",
        hint=f"fix what it says and run it yourself (`{result.command}` in the sync source), then apply "
        f"again; run.smoke in {path} is the check",
    )
