"""RP11 at plan time: packages a setup installs fill the small container disk.

run.caches: durable moves pip's and Hugging Face's caches to the durable mount, but what `pip install`
installs still goes to the image's site-packages, on `/`: RunPod's container disk (about 5 GB unless
raised, RP11). A torch-sized requirements file alone is several GB.
"""

from __future__ import annotations

import re
from typing import Any

from gpujob.plan.model import Finding

# A setup below this many GB that installs packages gets the warning: CUDA wheels are GBs each.
ROOMY_GB = 30
_INSTALLS = re.compile(
    r"\b(?:pip3?|uv\s+pip|python3?\s+-m\s+pip)\s+install\b|\b(?:conda|mamba|micromamba)\s+(?:env\s+)?(?:install|create|update)\b"
    r"|\bapt(?:-get)?\s+(?:-\S+\s+)*install\b|\bpoetry\s+install\b|\buv\s+sync\b"
)


def installs_packages(setup: str | None) -> str | None:
    """The first package install a setup command runs (`pip install`, `apt-get install`, ...), or None."""
    if not setup:
        return None
    m = _INSTALLS.search(setup)
    return re.sub(r"\s+", " ", m.group(0)) if m else None


def container_disk_findings(ctx: Any) -> list[Finding]:
    spec = ctx.spec
    if spec.platform != "runpod" or spec.run is None or spec.state == "absent":
        return []
    what = installs_packages(spec.run.setup)
    if what is None:
        return []
    default = ctx.profile.tier("container_disk").default_gb or 5
    size = spec.machine.container_disk_gb or default
    if size >= ROOMY_GB:
        return []
    return [
        ctx.finding(
            "RP11",
            "warning",
            f"run.setup runs `{what}` onto the {size} GB container disk, which packages like torch fill",
            detail="What setup installs goes to the image's site-packages on / (the container disk), even with "
            "run.caches: durable (that moves only the caches). A full / fails the install, or the run's next "
            "write, with 'No space left on device' while the volume still has room.",
            fix=f"raise machine.container_disk_gb to {ROOMY_GB} or more, or install into a virtualenv on the "
            f"durable mount ({spec.storage.mount}/venv), or bake the packages into the image",
            key="run.setup",
        )
    ]
