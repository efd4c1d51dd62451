"""Simulated pods answer nvidia-smi and the kernel log like a GPU host; gpu_fault makes a host faulty."""

from __future__ import annotations

from tests.sim.conftest import create_pod, ssh, wait_pod

QUERY = (
    "nvidia-smi --query-gpu=index,name,clocks_throttle_reasons.hw_slowdown,"
    "clocks_throttle_reasons.hw_thermal_slowdown --format=csv,noheader"
)


def test_a_healthy_pod_reports_its_billed_gpus_and_a_clean_kernel_log(sim, rp, ssh_key):
    key, pub = ssh_key
    pod = wait_pod(rp, create_pod(rp, pub, gpu={"id": "NVIDIA A40", "count": 2})["id"])
    d = pod["ssh"]["direct"]
    out = ssh(key, d["host"], d["port"], QUERY).stdout.strip().splitlines()
    assert out == ["0, NVIDIA A40, Not Active, Not Active", "1, NVIDIA A40, Not Active, Not Active"]
    log = ssh(key, d["host"], d["port"], "dmesg").stdout
    assert "NVRM: loading NVIDIA" in log and "Xid" not in log
    assert "GPU 1: NVIDIA A40" in ssh(key, d["host"], d["port"], "nvidia-smi -L").stdout


def test_gpu_fault_makes_the_next_pod_faulty_and_only_that_one(sim, rp, ssh_key):
    key, pub = ssh_key
    sim.inject("gpu_fault", kind="xid", count=1)
    bad = wait_pod(rp, create_pod(rp, pub)["id"])
    good = wait_pod(rp, create_pod(rp, pub)["id"])
    b, g = bad["ssh"]["direct"], good["ssh"]["direct"]
    assert "NVRM: Xid (PCI:0000:01:00): 79" in ssh(key, b["host"], b["port"], "dmesg").stdout
    assert "Xid" not in ssh(key, g["host"], g["port"], "dmesg").stdout
    # A faulty host stays faulty across a stop and start of the same pod.
    rp.post(f"/pods/{bad['id']}/action", json={"action": "stop"}).raise_for_status()
    rp.post(f"/pods/{bad['id']}/action", json={"action": "start"}).raise_for_status()
    b2 = wait_pod(rp, bad["id"])["ssh"]["direct"]
    assert "Xid" in ssh(key, b2["host"], b2["port"], "dmesg").stdout


def test_a_throttled_host_shows_hardware_slowdown(sim, rp, ssh_key):
    key, pub = ssh_key
    sim.inject("gpu_fault", kind="throttle")
    d = wait_pod(rp, create_pod(rp, pub)["id"])["ssh"]["direct"]
    assert ssh(key, d["host"], d["port"], QUERY).stdout.strip() == "0, NVIDIA A40, Active, Active"


def test_a_zero_gpu_pod_finds_no_devices(sim, rp, ssh_key):
    key, pub = ssh_key
    pod = wait_pod(rp, create_pod(rp, pub)["id"])
    sim.inject("zero_gpu", pod_id=pod["id"])
    rp.post(f"/pods/{pod['id']}/action", json={"action": "stop"}).raise_for_status()
    rp.post(f"/pods/{pod['id']}/action", json={"action": "start"}).raise_for_status()
    d = wait_pod(rp, pod["id"])["ssh"]["direct"]
    out = ssh(key, d["host"], d["port"], "nvidia-smi", check=False)
    assert out.returncode == 6 and "No devices were found" in out.stdout


def test_gpu_fault_needs_a_kind(sim):
    import urllib.error

    import pytest

    with pytest.raises(urllib.error.HTTPError):
        sim.inject("gpu_fault")


def test_disk_fill_makes_df_report_the_disks_that_full_and_0_restores_them(sim, rp, ssh_key):
    key, pub = ssh_key
    d = wait_pod(rp, create_pod(rp, pub)["id"])["ssh"]["direct"]
    real = ssh(key, d["host"], d["port"], "df -P -B1 /workspace").stdout.splitlines()[1].split()
    sim.inject("disk_fill", percent=96)
    full = ssh(key, d["host"], d["port"], "df -P -B1 /workspace; df -P -i /").stdout.splitlines()
    blocks, inodes = full[1].split(), full[3].split()
    assert blocks[1] == real[1] and blocks[4] == "96%" and abs(int(blocks[2]) - int(real[1]) * 0.96) <= 1
    assert inodes[4] == "96%"
    sim.inject("disk_fill", percent=0)
    again = ssh(key, d["host"], d["port"], "df -P -B1 /workspace").stdout.splitlines()[1].split()
    assert again[4] != "96%"
