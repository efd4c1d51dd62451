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
    shutil.copytree(ROOT, src, ignore=shutil.ignore_patterns(".git", "__pycache__", ".gpujob", "*.egg-info"))
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
        "gpujob/render/templates/plan.md.j2",
        "gpujob/ssh/templates/launcher.sh.j2",
        "gpujob/audit/templates/audit.md.j2",
    ):
        assert needed in names, needed
    assert not [n for n in names if n.startswith("tests/") or "/.gpujob/" in n]
