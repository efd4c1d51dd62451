"""A simulated pod's df reports each disk at its own size (a 20 GB volume shows 20 GB), not the
simulator host's filesystem; disk_fill still applies on top, inode listings stay the real df's."""

from __future__ import annotations

import subprocess
from pathlib import Path

from gpujob.sim import podisks
from gpujob.sim.gpuhost import GpuHost, fill_disks, install


def pod(tmp_path: Path) -> tuple[Path, Path, Path]:
    ctl, root, vol = tmp_path / "ctl", tmp_path / "container", tmp_path / "volume"
    for d in (root / "tmp", vol):
        d.mkdir(parents=True)
    (vol / "ckpt.bin").write_bytes(b"\0" * 3 * 1024 * 1024)
    install(ctl, GpuHost(model="NVIDIA A40", count=1))
    podisks.write(ctl, {"/": (root, 30), "/workspace": (vol, 20)})
    return ctl, root, vol


def df(ctl: Path, *args: str) -> list[list[str]]:
    out = subprocess.run([str(ctl / "gpu" / "bin" / "df"), *args], capture_output=True, text=True, check=True)
    return [line.split() for line in out.stdout.splitlines()]


def test_each_disk_reports_its_own_size_and_what_it_holds(tmp_path: Path) -> None:
    ctl, root, vol = pod(tmp_path)
    header, ws, tmp = df(ctl, "-P", "-B1", str(vol), str(root / "tmp"))
    assert header[0] == "Filesystem"
    assert ws[1] == "20000000000" and ws[5] == "/workspace" and ws[4] == "1%"
    assert 3 * 2**20 <= int(ws[2]) <= 3 * 2**20 + 2**16  # what the volume holds (du: the file and its dir)
    assert int(ws[3]) == 20_000_000_000 - int(ws[2])
    assert tmp[1] == "30000000000" and tmp[5] == "/"  # not on the volume: the container disk
    (k,) = df(ctl, "-Pk", str(vol / "ckpt.bin"))[1:]  # gpujob's free-space check, on a file
    assert k[1] == str(20_000_000_000 // 1024)


def test_disk_fill_applies_on_top_and_inodes_stay_real(tmp_path: Path) -> None:
    ctl, _, vol = pod(tmp_path)
    fill_disks(ctl, 96)
    (row,) = df(ctl, "-P", "-B1", str(vol))[1:]
    assert row[1] == "20000000000" and row[4] == "96%" and row[2] == "19200000000"
    (inodes,) = df(ctl, "-P", "-i", str(vol))[1:]
    assert inodes[4] == "96%"  # the real df's inode row, filled


def test_no_disks_file_means_the_real_df(tmp_path: Path) -> None:
    ctl, _, vol = pod(tmp_path)
    podisks.write(ctl, {})
    (row,) = df(ctl, "-P", "-B1", str(vol))[1:]
    real = subprocess.run(["df", "-P", "-B1", str(vol)], capture_output=True, text=True).stdout
    assert row[1] == real.splitlines()[1].split()[1]


def test_a_pod_with_a_20_gb_volume_shows_20_gb(sim, rp, ssh_key):
    from tests.sim.conftest import create_pod, ssh, wait_pod

    key, pub = ssh_key
    d = wait_pod(rp, create_pod(rp, pub, disk=30)["id"])["ssh"]["direct"]
    rows = ssh(key, d["host"], d["port"], "df -P -B1 /workspace /").stdout.splitlines()[1:]
    assert [r.split()[1] for r in rows] == ["20000000000", "30000000000"]
