"""What gpujob asks RunPod to create: the v2 create-pod body for an on-demand pod, and the
environment every pod gets (the run's env plus the SSH public key)."""

from __future__ import annotations

from typing import Any

from gpujob.providers.base import LaunchRequest
from gpujob.providers.runpod import spot


def on_demand_body(r: LaunchRequest) -> dict[str, Any]:
    body: dict[str, Any] = {
        "name": r.name,
        "gpu": {"id": r.gpu_id, "count": r.gpu_count},
        "cloud": r.cloud.upper(),
        "ports": ["22/tcp"],
        "env": pod_env(r),
        "startSsh": True,
    }
    if r.image:
        body["image"] = r.image
    if r.template:
        body["templateId"] = r.template
    if r.region:
        body["dataCenterIds"] = [r.region]
    # Unset: the default the plan priced (profile tier container_disk), not the platform's own
    # default (50 GB in the v2 examples), so plan, create and audit agree.
    body["disk"] = r.container_disk_gb or spot.default_container_disk_gb()
    if r.min_cuda:
        # RP9: a floor, compared numerically (v2 CreateGpuConfig.minCudaVersion); allowedCudaVersions
        # would be an exact set that a version no host reports turns into a capacity error
        body["gpu"]["minCudaVersion"] = r.min_cuda
    if r.network_volume_id:
        body["mounts"] = {"network": [{"volumeId": r.network_volume_id, "path": r.mount_path}]}
    elif r.volume_gb:
        body["mounts"] = {"persistent": {"size": r.volume_gb, "path": r.mount_path}}
    return body


def pod_env(r: LaunchRequest) -> dict[str, str]:
    env = dict(r.env)
    if r.ssh_public_key:
        env["PUBLIC_KEY"] = r.ssh_public_key
    return env
