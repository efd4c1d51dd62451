"""Paperspace lifecycles (filled in below the first version)."""

from __future__ import annotations

from gpujob.sim.engine import Simulator


def auto_shutdown_due(sim: Simulator) -> None:
    return None


def force_shutdown(sim: Simulator, machine_id: str | None) -> list[str]:
    return []
