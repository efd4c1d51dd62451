"""Issue 13: with one 200 MB line in the run's log, `gpujob status`, `gpujob plan` and
`gpujob logs -n 200` each peak below 150 MB RSS (the log is cut on the pod; nothing reads it whole).

A quickstart copy is applied against the simulator with a run that writes the line and then idles;
each command's own VmHWM is the figure, the limit its floor."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.harness import Result
from bench.memory import peak_rss

LIMIT_MB = 150.0
LINE_BYTES = 200_000_000
QUICKSTART = Path(__file__).resolve().parents[1] / "examples" / "quickstart"
RUN = f"""echo before the long line
head -c {LINE_BYTES} /dev/zero | tr '\\000' x
echo
exec sleep 3600
"""
MARK = f"…[cut {(LINE_BYTES - 64 * 1024) / 1e6:.1f} MB]"  # the whole line is in the log

# (figure, argv, what its output must show for the figure to mean anything)
COMMANDS = [
    ("status", ["status"], MARK),
    ("plan", ["plan", "--no-color"], "quickstart"),
    ("logs -n 200", ["logs", "-n", "200"], MARK),
]


def _project(root: Path) -> Path:
    d = root / "quickstart"
    d.mkdir()
    for name in ("train.py", "verify_ckpt.py"):
        shutil.copy(QUICKSTART / name, d / name)
    (d / "longline.sh").write_text(RUN)
    job = (
        (QUICKSTART / "job.yaml").read_text().replace("command: python3 train.py", "command: sh longline.sh")
    )
    (d / "job.yaml").write_text(job)
    return d


def _gj(argv: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "gpujob", *argv], cwd=cwd, env=env, capture_output=True, text=True, timeout=600
    )


def run(repeat: int, quick: bool = False) -> list[Result]:
    from gpujob.sim.testing import running_simulator

    results = [
        Result(f"{name} with a 200 MB log line: peak RSS", f"limit {LIMIT_MB:g} MB", 1.0, unit=" MB")
        for name, _, _ in COMMANDS
    ]
    with (
        tempfile.TemporaryDirectory() as tmp,
        running_simulator(Path(tmp) / "sim", provision_seconds=0.05, boot_seconds=0.0) as sim,
    ):
        d = _project(Path(tmp))
        env = {k: v for k, v in os.environ.items() if not k.startswith("GPUJOB_")}
        env.update({**sim.env, "CI": "true", "NO_COLOR": "1"})
        applied = _gj(["apply", "--auto-approve"], d, env)
        if applied.returncode != 0:
            raise RuntimeError(f"apply exited {applied.returncode}: {applied.stderr[-500:]}")
        deadline = time.monotonic() + 120
        while MARK not in _gj(["logs", "-n", "2"], d, env).stdout:  # the run has written the whole line
            if time.monotonic() > deadline:
                raise RuntimeError("the run did not write its 200 MB line within 120 s")
            time.sleep(1)
        for _ in range(1 if quick else max(1, repeat // 2)):
            for result, (name, argv, shows) in zip(results, COMMANDS, strict=True):
                mb, proc = peak_rss(argv, env, cwd=d)
                if shows not in proc.stdout:
                    raise RuntimeError(f"gpujob {name} did not show {shows!r}: {proc.stderr[-500:]}")
                result.figure_samples.append(mb)
                result.floor_samples.append(LIMIT_MB)
    return results
