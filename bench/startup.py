"""Target 1: start-up. `gpujob --help` ≤ 2× `python -c "import click"`; validate of one spec ≤ 3× that
floor; validate of 100 specs ≤ 1.5× one spec."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

from bench.harness import PY, Result, alternate, timed_command

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "runpod-ondemand" / "job.yaml"


def run(repeat: int) -> list[Result]:
    # An installed package has its bytecode compiled at install time (pip does it; click's is, too). A
    # checkout run with PYTHONDONTWRITEBYTECODE=1 would recompile gpujob at every start and time that.
    subprocess.run([PY, "-m", "compileall", "-q", str(ROOT / "gpujob")], check=True)
    floor = timed_command([PY, "-c", "import click"])
    results = [
        alternate(
            Result("gpujob --help", "python -c 'import click'", 2.0),
            timed_command([PY, "-m", "gpujob", "--help"]),
            floor,
            repeat=repeat,
        )
    ]
    if not EXAMPLE.exists():
        results.append(
            Result(
                "gpujob validate (1 spec)",
                "import click",
                3.0,
                error="examples/runpod-ondemand/job.yaml missing",
            )
        )
        return results
    with tempfile.TemporaryDirectory() as tmp:
        many = Path(tmp)
        files = []
        for i in range(100):
            target = many / f"j{i}.job.yaml"
            text = EXAMPLE.read_text().replace("name: ", f"name: j{i}-", 1)
            target.write_text(text)
            files.append(str(target))
        one = timed_command([PY, "-m", "gpujob", "validate", str(EXAMPLE)])
        results.append(
            alternate(
                Result("gpujob validate (1 spec)", "python -c 'import click'", 3.0), one, floor, repeat=repeat
            )
        )
        hundred = timed_command([PY, "-m", "gpujob", "validate", *files])
        results.append(
            alternate(
                Result("gpujob validate (100 specs)", "gpujob validate (1 spec)", 1.5),
                hundred,
                one,
                repeat=repeat,
            )
        )
        shutil.rmtree(many, ignore_errors=True)
    return results
