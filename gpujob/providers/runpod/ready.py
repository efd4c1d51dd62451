"""When a RunPod pod counts as up: RUNNING with direct SSH and its GPUs, watched until then, failing
early on what never recovers (a start that does not take, ERROR, RUNNING without a public port 22)."""

from __future__ import annotations

from datetime import datetime

from gpujob.clock import Clock
from gpujob.errors import ProviderError, ProviderNotFound, ProviderUnavailable
from gpujob.live import LiveResource
from gpujob.providers.base import NoEffectError, ZeroGpuError
from gpujob.providers.runpod import wire
from gpujob.providers.runpod.client import PLATFORM, RunPodClient
from gpujob.providers.runpod.normalize import pod_to_live, ssh_of
from gpujob.providers.wait import Timeouts, poll


async def wait_ready(
    client: RunPodClient, clock: Clock, t: Timeouts, pod_id: str, *, from_stopped: bool = False
) -> LiveResource:
    moved = False

    def check(pod: wire.Pod, elapsed: float) -> None:
        nonlocal moved
        if pod.status in ("TERMINATED",):
            raise ProviderNotFound(f"pod {pod_id} was terminated while starting", platform=PLATFORM)
        if pod.status in ("PROVISIONING", "STARTING", "RUNNING"):
            moved = True
        if from_stopped and not moved and elapsed >= t.stuck:
            raise NoEffectError(
                f"start was accepted but pod {pod_id} is still {pod.status} after {elapsed:.0f}s",
                platform=PLATFORM,
                call="POST /v2/pods/{id}/action",
                hint="its host may have lost the GPU (RP1); replace the pod (terminate + create)",
            )
        if pod.status == "ERROR" and moved:
            raise ProviderError(
                f"pod {pod_id} went to ERROR while starting",
                platform=PLATFORM,
                hint="check the image and start command; the pod is not billing GPU time",
            )

    bare_since: datetime | None = None

    def no_public_ssh(pod: wire.Pod) -> None:
        # RUNNING with its container up (runtime set) but port 22 not published on a public
        # address: community hosts without a public IP stay like this for good, and bill meanwhile.
        nonlocal bare_since
        if not (pod.status == "RUNNING" and pod.runtime is not None and ssh_of(pod) is None):
            bare_since = None
            return
        bare_since = bare_since or clock.now()
        waited = (clock.now() - bare_since).total_seconds()
        if waited >= t.no_ssh_grace:
            raise ProviderError(
                f"pod {pod_id} is RUNNING but publishes no public port 22 (no ssh.direct, no public "
                f"22/tcp in runtime.ports) after {waited:.0f}s; gpujob needs direct SSH and stops waiting",
                platform=PLATFORM,
                call="GET /v2/pods/{id}",
                hint="it is billing now: remove it (gpujob destroy, or the RunPod console) and use "
                "machine.cloud: secure (community hosts may have no public IP)",
            )

    def check_all(pod: wire.Pod, elapsed: float) -> None:
        check(pod, elapsed)
        no_public_ssh(pod)

    pod, ok = await poll(
        clock,
        lambda: client.get_pod(pod_id),
        lambda p: p.status == "RUNNING" and ssh_of(p) is not None,
        timeout=t.ready,
        interval=t.interval,
        first=t.first_interval,
        check=check_all,
    )
    if not ok:
        raise ProviderUnavailable(
            f"pod {pod_id} is {pod.status} without an SSH endpoint after {t.ready:.0f}s",
            platform=PLATFORM,
            hint="it may be billing; check it with `gpujob state` and re-run apply",
        )
    return checked(pod)


def checked(pod: wire.Pod) -> LiveResource:
    if pod.cpu is None and (pod.gpu is None or pod.gpu.count == 0):
        raise ZeroGpuError(
            f"pod {pod.id} is running with zero GPUs (its host re-rented the GPU while it was stopped)",
            platform=PLATFORM,
            hint="replace it: terminate and create a new pod (data on a network volume survives)",
        )
    return pod_to_live(pod)
