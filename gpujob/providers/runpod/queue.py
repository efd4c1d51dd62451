"""Deploy When Available: a RunPod create that waits in RunPod's queue for capacity.

RunPod's v2 reference documents queued pods (docs.runpod.io/api-reference-v2/pods/get-a-queued-pod,
list-queued-pods, cancel-a-queued-pod; last modified 2026-11-13, read 2026-12-07): statuses QUEUED,
DEPLOYED (with `podId`), FAILED (`failureReason`), EXPIRED (after `queue.expiresAt`) and CANCELLED
(DELETE /v2/queued-pods/{id}). The pages read name no create route; gpujob takes the simplest reading,
the one its simulator serves: `POST /v2/queued-pods` with a `POST /v2/pods` body plus
`queue: {expiresAt}`. A queued pod is not a pod: it bills nothing until it is placed.

The queue is v2 only, so it places on-demand pods (v2 has no spot): gpujob queues only creates that may
be on-demand (`spot: false` or `prefer`)."""

from __future__ import annotations

import os
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from pydantic import Field

from gpujob.errors import ProviderCapacityError
from gpujob.model import WireModel

ENV_POLL = "GPUJOB_QUEUE_POLL_S"  # seconds between reads of a queued pod (default POLL_S)
POLL_S = 30.0
SOURCE = "docs.runpod.io/api-reference-v2/pods/get-a-queued-pod (Deploy When Available; read 2026-12-07)"


class QueuedPod(WireModel):
    wire_optional = frozenset({"podId", "failureReason"})
    id: str
    status: str
    pod_id: str | None = Field(None, alias="podId")
    failure_reason: str | None = Field(None, alias="failureReason")


def poll_interval() -> float:
    raw = os.environ.get(ENV_POLL, "").strip()
    try:
        return max(0.01, float(raw)) if raw else POLL_S
    except ValueError:
        return POLL_S


async def wait_in_queue(
    client: Any,
    clock: Any,
    body: dict[str, Any],
    *,
    wait_s: float,
    platform_now: Any,
    note: Callable[[float, float], None],
) -> str:
    """Queue the create and wait until RunPod places it; returns the new pod's id. Past `wait_s` (or when
    RunPod expires or refuses it) a ProviderCapacityError, after cancelling what still waits."""
    expires = platform_now() + timedelta(seconds=wait_s)
    queued = {**body, "queue": {"expiresAt": expires.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"}}
    q = QueuedPod.model_validate(await client.rest.request("POST", "/queued-pods", json_body=queued))
    started = clock.now()
    interval = poll_interval()
    while q.status == "QUEUED":
        waited = (clock.now() - started).total_seconds()
        if waited >= wait_s:
            await client.rest.request("DELETE", f"/queued-pods/{q.id}")
            break
        note(waited, wait_s)
        await clock.sleep(min(interval, max(wait_s - waited, 0.01)))
        q = QueuedPod.model_validate(await client.rest.request("GET", f"/queued-pods/{q.id}"))
    if q.status == "DEPLOYED" and q.pod_id:
        return q.pod_id
    why = q.failure_reason or ("expired" if q.status in ("QUEUED", "EXPIRED") else q.status.lower())
    raise ProviderCapacityError(
        f"waited {wait_s:.0f}s in RunPod's queue (Deploy When Available) without capacity: {why}",
        platform="runpod",
        call="POST /v2/queued-pods",
        hint="machine.wait_up_to waits longer; or list more GPUs / regions, or a fallback platform",
    )
