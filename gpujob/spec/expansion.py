"""What a loaded job file becomes before plan, apply and watch see it: one job, or several when a capability
says so (a sweep: one job per queue, gpujob.sweep.expand). The loader imports no capability: the
composition root (gpujob.cli.wiring) installs the expansion, built from the capabilities it plugs in
(Capability.expand_loaded); with none installed a file is its one job."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

Expand = Callable[[Any], list[Any]]  # a LoadedSpec -> the LoadedSpecs it stands for

_expand: Expand | None = None


def install(expand: Expand | None) -> None:
    global _expand
    _expand = expand


def expanded(loaded: Any) -> list[Any]:
    return [loaded] if _expand is None else _expand(loaded)
