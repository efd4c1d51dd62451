"""The wheel carries what an installed gpujob needs at run time: profiles, schemas and templates."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_wheel_ships_profiles_schemas_and_templates(tmp_path: Path) -> None:
    src = tmp_path / "src"
    # Virtualenvs in the checkout (make install's .venv, the RunPod SDK's .venv-runpod-sdk) are not source.
    skip = shutil.ignore_patterns(
        ".git", "__pycache__", ".gpujob", "*.egg-info", ".venv*", ".mypy_cache", ".ruff_cache"
    )
    shutil.copytree(ROOT, src, ignore=skip)
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "-q",
            "--no-deps",
            "--no-build-isolation",
            "-w",
            str(tmp_path),
            str(src),
        ],
        check=True,
        capture_output=True,
    )
    (wheel,) = tmp_path.glob("gpujob-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    for needed in (
        "gpujob/_data/profiles/runpod.yaml",
        "gpujob/_data/profiles/paperspace.yaml",
        "gpujob/_data/schemas/job.schema.json",
        "gpujob/_data/schemas/plan.schema.json",
        "gpujob/spec/fastrules.json",  # `gpujob validate`'s fast path (without it: always the full one)
        "gpujob/render/templates/plan.md.j2",
        "gpujob/ssh/templates/launcher.sh.j2",
        "gpujob/audit/templates/audit.md.j2",
    ):
        assert needed in names, needed
    assert not [n for n in names if n.startswith("tests/") or "/.gpujob/" in n]
    _installed_validate_takes_the_fast_path(wheel, tmp_path)


def _installed_validate_takes_the_fast_path(wheel: Path, tmp_path: Path) -> None:
    """Unpacked as an install lays it out, the wheel's fast path finds its table current (the sources it
    was made from are in the wheel too) and validates a good job file without importing pydantic."""
    site = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(site)
    job = tmp_path / "work" / "job.yaml"
    job.parent.mkdir()
    shutil.copy(ROOT / "examples" / "runpod-ondemand" / "job.yaml", job)
    code = (
        "import sys\n"
        "import gpujob\n"
        "from gpujob.cli.main import cli\n"
        "try:\n"
        "    cli.main(args=['validate', 'job.yaml'], standalone_mode=False)\n"
        "finally:\n"
        "    print(gpujob.__file__)\n"
        "    print(sorted(n for n, m in sys.modules.items() if n == 'pydantic' and getattr(m, '__spec__', None)))\n"
    )
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(tmp_path),
        "PYTHONPATH": str(site),
        "GPUJOB_PROFILE_CACHE": str(tmp_path / "cache"),
    }
    for _ in range(2):  # the first run makes the profile facts (from the validated profiles)
        proc = subprocess.run(
            [sys.executable, "-c", code], cwd=job.parent, env=env, capture_output=True, text=True, check=True
        )
    lines = proc.stdout.splitlines()
    assert lines == ["ok: 1 file(s) valid", str(site / "gpujob" / "__init__.py"), "[]"], (
        proc.stdout + proc.stderr
    )
