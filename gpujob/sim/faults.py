"""Faults on demand. Request-level faults (http_error, latency, drop) are consumed by the HTTP layer;
lifecycle faults (capacity, create_500_but_created, zero_gpu) by the engine at the matching call;
instant faults (preempt, low_balance, auto_shutdown) act when injected."""

from __future__ import annotations

import threading
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr

from gpujob.sim.fault_options import FAULTS, OPTIONS, QUEUED, unknown_options

__all__ = ["FAULTS", "OPTIONS", "QUEUED", "Fault", "FaultBook", "unknown_options"]


class Fault(BaseModel):
    model_config = ConfigDict(extra="forbid")

    fault: str
    count: int | None = Field(None, description="How many matching events it affects; None = until cleared.")
    platform: str | None = None
    path: str | None = Field(None, description="Only requests whose path contains this.")
    method: str | None = None
    gpu: str | None = None
    region: str | None = None
    status: int = 500
    retry_after: float | None = None
    seconds: float = 0.0
    pod_id: str | None = None
    cloud: str | None = Field(None, description="SECURE / COMMUNITY: only requests or pods on that cloud.")
    public_port: bool = True
    factor: float = 1.0
    grace: float | None = Field(None, description="preempt: seconds between the signal and the kill.")
    machine_id: str | None = Field(
        None,
        description="auto_shutdown: only this Paperspace machine; preempt: this private-network machine.",
    )
    balance: float | None = Field(None, description="clear: the account balance afterwards.")
    percent: float | None = Field(
        None,
        ge=0,
        le=100,
        description="disk_fill: how full df says each disk is; gpu_util: the GPU utilisation nvidia-smi reports.",
    )
    kind: Literal["xid", "throttle", "busy"] | None = Field(
        None,
        description="gpu_fault: an Xid error in the kernel log, a hardware/thermal slowdown, or GPU memory "
        "already held by a process nvidia-smi does not list (U11).",
    )
    # The platform ids `gpu` stands for (gpujob.sim.fault_gpus, set at inject); None: match by substring.
    _gpu_ids: frozenset[str] | None = PrivateAttr(None)

    def for_gpus(self, ids: frozenset[str]) -> Fault:
        self._gpu_ids = ids
        return self


class FaultBook:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._faults: list[Fault] = []

    def add(self, fault: Fault) -> None:
        with self._lock:
            self._faults.append(fault)

    def clear(self) -> None:
        with self._lock:
            self._faults.clear()

    def active(self) -> list[dict[str, Any]]:
        with self._lock:
            return [f.model_dump(exclude_none=True) for f in self._faults]

    def take(self, kind: str, **match: Any) -> Fault | None:
        """The first active fault of `kind` matching the event; consumes one of its count."""
        with self._lock:
            for f in self._faults:
                if f.fault != kind or not _matches(f, match):
                    continue
                if f.count is not None:
                    f.count -= 1
                    if f.count <= 0:
                        self._faults.remove(f)
                return f
        return None

    def peek(self, kind: str, **match: Any) -> Fault | None:
        with self._lock:
            return next((f for f in self._faults if f.fault == kind and _matches(f, match)), None)


def _matches(f: Fault, event: dict[str, Any]) -> bool:
    if f.platform and event.get("platform") and f.platform != event["platform"]:
        return False
    if f.path and f.path not in (event.get("path") or ""):
        return False
    if f.method and event.get("method") and f.method.upper() != event["method"].upper():
        return False
    if f.gpu and event.get("gpu") is not None and not _gpu_matches(f, str(event["gpu"]).lower()):
        return False
    if f.region and event.get("region") is not None and f.region.lower() != str(event["region"]).lower():
        return False
    if f.cloud and event.get("cloud") is not None and f.cloud.upper() != str(event["cloud"]).upper():
        return False
    return not (f.pod_id and event.get("pod_id") and f.pod_id != event["pod_id"])


def _gpu_matches(f: Fault, gpu: str) -> bool:
    if f._gpu_ids is not None:
        return gpu in f._gpu_ids
    return bool(f.gpu) and str(f.gpu).lower() in gpu
