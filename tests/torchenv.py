"""Where `make install` puts torch for the multi-node e2e test (scripts/python-deps.sh), off the Python's
path so no other test runs with it: <prefix>/lib/gpujob-test-torch, seen inside a simulated pod at the
same path (the simulated image's Python, gpujob.sim.rp_engine). A test that needs torch puts it on its
run's PYTHONPATH and its torchrun on PATH; without it the test fails, never skips."""

from __future__ import annotations

import sys
from pathlib import Path

PREFIX = Path(sys.prefix).resolve()
TORCH_DIR = PREFIX / "lib" / "gpujob-test-torch"


def torch_env() -> dict[str, str]:
    """run.env for a job whose command runs torch or torchrun on a simulated pod."""
    path = f"{TORCH_DIR / 'bin'}:{PREFIX / 'bin'}:/usr/local/bin:/usr/bin:/bin"
    return {"PATH": path, "PYTHONPATH": str(TORCH_DIR)}


def require_torch() -> None:
    """torch importable in this test process too (from TORCH_DIR), or the test fails naming the fix."""
    if not (TORCH_DIR / "torch").is_dir():
        raise AssertionError(
            f"torch is not installed in {TORCH_DIR}: run `make install` (scripts/python-deps.sh)"
        )
    if str(TORCH_DIR) not in sys.path:
        sys.path.append(str(TORCH_DIR))
    import torch.distributed as dist

    assert dist.is_gloo_available(), "torch without gloo"
