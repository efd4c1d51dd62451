"""The seeded account: owned, other-gpujob and foreign resources in every state on both platforms."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from gpujob.live import LiveResource
from tests.owners import OTHER, PROJECT, machine, marker
from tests.owners import volume as owned_volume

NOW = datetime(2026, 7, 1, 12, 0, tzinfo=UTC)
LOCAL_JOBS = {"bert": PROJECT, "sweep": PROJECT, "render": PROJECT}  # job -> this repo's project id
DAY = 86400.0


def ago(hours: float) -> datetime:
    return NOW - timedelta(hours=hours)


def seeded_resources() -> list[LiveResource]:
    rp = dict(platform="runpod")
    ps = dict(platform="paperspace")
    return [
        # --- RunPod ---
        LiveResource(**rp, kind="pod", id="rp-bert", name=machine("bert"), status="running", raw_status="RUNNING", attributes=marker(),
                     gpu_id="NVIDIA A100 80GB PCIe", gpu_count=1, cloud="secure", container_disk_gb=20,
                     network_volume_id="nv-bert", region="EU-RO-1", created_at=ago(48), started_at=ago(24)),
        LiveResource(**rp, kind="network_volume", id="nv-bert", name=owned_volume("bert", "ckpt"), status="available",
                     volume_gb=100, volume_tier="standard", region="EU-RO-1", created_at=ago(48)),
        LiveResource(**rp, kind="pod", id="rp-sweep", name=machine("sweep"), status="stopped", raw_status="EXITED",
                     gpu_id="NVIDIA A100 80GB PCIe", gpu_count=2, cloud="community", container_disk_gb=20,
                     volume_gb=200, cost_per_hour=0.0, created_at=ago(200), started_at=ago(120),
                     attributes={"last_status_change": "2026-06-27T12:00:00+00:00", **marker()}),
        LiveResource(**rp, kind="network_volume", id="nv-sweep", name=owned_volume("sweep", "data"), status="available",
                     volume_gb=500, volume_tier="standard", region="US-KS-2", created_at=ago(30 * 24)),
        LiveResource(**rp, kind="network_volume", id="nv-sweep-hp", name=owned_volume("sweep", "fast"), status="available",
                     volume_gb=50, volume_tier="high-performance", region="US-KS-2", created_at=ago(2)),
        LiveResource(**rp, kind="pod", id="rp-llama", name=machine("llama", OTHER), status="stopped", raw_status="EXITED",
                     gpu_id="NVIDIA H100 80GB HBM3", gpu_count=1, cloud="secure", container_disk_gb=50,
                     volume_gb=30, created_at=ago(40), started_at=ago(30),
                     attributes={"last_status_change": "2026-06-30T20:00:00+00:00", **marker(OTHER)}),
        # Another checkout's job of the same name as one of ours: never this repo's.
        LiveResource(**rp, kind="pod", id="rp-bert-other", name=machine("bert", OTHER), status="stopped",
                     raw_status="EXITED", gpu_id="NVIDIA A40", gpu_count=1, cloud="secure", container_disk_gb=20,
                     volume_gb=10, created_at=ago(30), started_at=ago(29),
                     attributes={"last_status_change": "2026-06-30T08:00:00+00:00", **marker(OTHER)}),
        LiveResource(**rp, kind="pod", id="rp-nb", name="my-notebook", status="running", raw_status="RUNNING",
                     gpu_id="NVIDIA H100 80GB HBM3", gpu_count=1, cloud="secure", spot=True, container_disk_gb=10,
                     volume_gb=20, cost_per_hour=2.75, created_at=ago(5), started_at=ago(5)),
        LiveResource(**rp, kind="network_volume", id="nv-sky", name="sky-vol", status="available",
                     volume_gb=1500, volume_tier="standard", region="EU-RO-1", created_at=ago(60 * 24)),
        LiveResource(**rp, kind="template", id="tpl-sky", name="sky-template-1", status="available",
                     created_at=ago(60 * 24)),
        LiveResource(**rp, kind="registry_auth", id="ra-sky", name="sky-registry-1", status="available"),
        # --- Paperspace ---
        LiveResource(**ps, kind="machine", id="m-render", name=machine("render"), status="stopped", raw_status="off",
                     gpu_id="A6000", gpu_count=1, region="ny2", volume_gb=500, public_ip="203.0.113.10",
                     public_ip_kind="static", created_at=ago(400), started_at=ago(200),
                     attributes={"last_status_change": "2026-06-25T12:00:00+00:00"}),
        LiveResource(**ps, kind="public_ip", id="203.0.113.10", name="203.0.113.10", status="available",
                     public_ip="203.0.113.10", public_ip_kind="static", machine_id="m-render", region="ny2",
                     created_at=ago(400)),
        LiveResource(**ps, kind="snapshot", id="snap-render", name="gpujob-render-pre-upgrade", status="available",
                     machine_id="m-render", volume_gb=100, created_at=ago(300)),
        LiveResource(**ps, kind="machine", id="m-ws", name="workstation", status="running", raw_status="ready",
                     gpu_id="A100-80G", gpu_count=1, region="ny2", volume_gb=2000, public_ip="203.0.113.30",
                     public_ip_kind="dynamic", created_at=ago(1000), started_at=ago(3)),
        LiveResource(**ps, kind="snapshot", id="snap-ws", name="workstation-daily", status="available",
                     machine_id="m-ws", volume_gb=2000, created_at=ago(20)),
        LiveResource(**ps, kind="snapshot", id="snap-gone", name="nightly", status="available",
                     machine_id="m-deleted", volume_gb=50, created_at=ago(90 * 24)),
        LiveResource(**ps, kind="public_ip", id="203.0.113.20", name="203.0.113.20", status="available",
                     public_ip="203.0.113.20", public_ip_kind="static", region="ny2", created_at=ago(10 * 24)),
        LiveResource(**ps, kind="machine", id="m-old", name="gpujob-old", status="stopped", raw_status="off",
                     gpu_id="A4000", gpu_count=1, region="ca1", volume_gb=50, public_ip_kind="dynamic",
                     created_at=ago(20 * 24)),
        LiveResource(**ps, kind="shared_drive", id="sd-team", name="team-share", status="available",
                     volume_gb=1000, region="ny2", created_at=ago(100 * 24)),
    ]  # fmt: skip
