"""Targets 3 and 4: code sync and checkpoint pull over SSH to a local OpenSSH sshd, against rsync in the
same run. First sync ≥ 0.9× rsync throughput (ratio = rsync time / gpujob time); no-op re-sync ≤ 1.2× an
rsync no-op; a re-sync after touching 10 small files sends only those; pull of a large checkpoint ≥ 0.9×
rsync; an interrupted pull resumes without re-sending what arrived."""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from bench.harness import Result

STRIPES = 2  # the striped pull's figure: one span and one connection each


def _make_tree(root: Path, big_mb: int, small_files: int) -> None:
    root.mkdir(parents=True, exist_ok=True)
    block = os.urandom(1 << 20)
    with open(root / "weights.bin", "wb") as f:
        for _ in range(big_mb):
            f.write(block)
    for i in range(small_files):
        sub = root / f"pkg{i % 40}"
        sub.mkdir(exist_ok=True)
        (sub / f"mod{i}.py").write_bytes(os.urandom(50 * 1024))


def _rsync(src: str, dest: str, endpoint, key: Path) -> float:  # type: ignore[no-untyped-def]
    ssh = (
        f"ssh -p {endpoint.port} -i {key} -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null"
        " -o LogLevel=ERROR -o BatchMode=yes"
    )
    start = time.perf_counter()
    subprocess.run(["rsync", "-a", "-e", ssh, src, f"{endpoint.user}@{endpoint.host}:{dest}"], check=True)
    return time.perf_counter() - start


def run(repeat: int, quick: bool = False) -> list[Result]:
    from gpujob.ssh.pull import pull_checkpoints
    from gpujob.ssh.session import connect
    from gpujob.ssh.sync import sync_tree
    from gpujob.ssh.testing import local_sshd

    big_mb, small = (40, 200) if quick else (400, 2000)
    ckpt_mb = 100 if quick else 2048
    reps = max(1, min(repeat, 2 if quick else 5))
    results: list[Result] = []
    with tempfile.TemporaryDirectory(dir="/var/tmp") as tmp:
        base = Path(tmp)
        src = base / "tree"
        _make_tree(src, big_mb, small)
        with local_sshd(base / "sshd") as (endpoint, key):
            known = base / "known_hosts.json"

            async def gp_sync(dest: str) -> tuple[float, object]:
                async with connect(endpoint, key_path=key, known_hosts=known, resource_id="bench") as remote:
                    start = time.perf_counter()
                    stats = await sync_tree(remote, src, dest, [])
                    return time.perf_counter() - start, stats

            first = Result(
                f"first sync {big_mb + small * 50 // 1024} MB",
                "rsync -a over ssh",
                1.0,
                higher_is_better=True,
            )
            noop = Result("no-op re-sync", "rsync -a no-op", 0.5)
            for i in range(reps):
                dest_g, dest_r = str(base / f"remote-g{i}"), str(base / f"remote-r{i}")
                g, _ = asyncio.run(gp_sync(dest_g))
                r = _rsync(f"{src}/", dest_r, endpoint, key)
                # throughput ratio: higher is better, so store speeds (MB/s) rather than times
                size_mb = big_mb + small * 50 / 1024
                first.figure_samples.append(size_mb / g)
                first.floor_samples.append(size_mb / r)
                g2, stats = asyncio.run(gp_sync(dest_g))
                r2 = _rsync(f"{src}/", dest_r, endpoint, key)
                noop.figure_samples.append(g2)
                noop.floor_samples.append(r2)
            first.unit = " MB/s"
            results += [first, noop]
            # touch 10 small files: only those may be sent
            for p in sorted(src.rglob("mod*.py"))[:10]:
                p.write_bytes(os.urandom(50 * 1024))
            _, stats = asyncio.run(gp_sync(str(base / "remote-g0")))
            sent = getattr(stats, "files_sent", None)
            touched = Result(
                "re-sync after touching 10 files: files sent", "10 files touched", 1.0, unit=" files"
            )
            touched.figure_samples.append(float(sent if sent is not None else -1))
            touched.floor_samples.append(10.0)
            results.append(touched)
            if os.environ.get("GPUJOB_BENCH_SYNC_ONLY"):  # the sync figures alone (the pulls take longer)
                return results

            # pull a large checkpoint
            remote_ck = base / "remote-ckpt"
            remote_ck.mkdir()
            with open(remote_ck / "step_000100.pt", "wb") as f:
                block = os.urandom(1 << 20)
                for _ in range(ckpt_mb):
                    f.write(block)
            pull = Result(
                f"pull+verify {ckpt_mb} MB checkpoint",
                "rsync -a over ssh",
                1.0,
                higher_is_better=True,
                unit=" MB/s",
            )

            striped = Result(
                f"pull+verify {ckpt_mb} MB checkpoint, {STRIPES} stripes over {STRIPES} connections",
                "rsync -a over ssh",
                1.0,
                higher_is_better=True,
                unit=" MB/s",
            )

            async def gp_pull(local: Path, stripes: int = 1) -> float:
                async with contextlib.AsyncExitStack() as stack:
                    remote = await stack.enter_async_context(
                        connect(endpoint, key_path=key, known_hosts=known, resource_id="bench")
                    )
                    pull.note = f"cipher {remote.conn.get_extra_info('recv_cipher')}"
                    start = time.perf_counter()  # the extra connections a striped pull opens count
                    lanes = [
                        await stack.enter_async_context(
                            connect(endpoint, key_path=key, known_hosts=known, resource_id="bench")
                        )
                        for _ in range(stripes - 1)
                    ]
                    await pull_checkpoints(
                        remote, str(remote_ck), local, verify=None, lanes=lanes, stripes=stripes
                    )
                    return time.perf_counter() - start

            for i in range(reps):
                g = asyncio.run(gp_pull(base / f"local-g{i}"))
                gs = asyncio.run(gp_pull(base / f"local-s{i}", STRIPES))
                local_r = base / f"local-r{i}"
                r = _rsync_pull(f"{remote_ck}/", str(local_r), endpoint, key)
                pull.figure_samples.append(ckpt_mb / g)
                striped.figure_samples.append(ckpt_mb / gs)
                pull.floor_samples.append(ckpt_mb / r)
                striped.floor_samples.append(ckpt_mb / r)
                for d in (base / f"local-g{i}", base / f"local-s{i}", local_r):
                    shutil.rmtree(d, ignore_errors=True)
            results += [pull, striped]

            # a pull interrupted half-way: the arrived half stays as .part and is not sent again
            resumed_dir = base / "local-resume"
            resumed_dir.mkdir()
            src_file = remote_ck / "step_000100.pt"
            half = src_file.stat().st_size // 2
            with open(src_file, "rb") as fin, open(resumed_dir / "step_000100.pt.part", "wb") as fout:
                fout.write(fin.read(half))

            async def gp_resume() -> int:
                async with connect(endpoint, key_path=key, known_hosts=known, resource_id="bench") as remote:
                    pulled = await pull_checkpoints(remote, str(remote_ck), resumed_dir, verify=None)
                    return sum(p.bytes_transferred for p in pulled)

            resent = Result("resumed pull: bytes sent", "bytes still missing", 1.0, unit=" MB")
            resent.figure_samples.append(asyncio.run(gp_resume()) / 2**20)
            resent.floor_samples.append((src_file.stat().st_size - half) / 2**20)
            results.append(resent)
    return results


def _rsync_pull(src: str, dest: str, endpoint, key: Path) -> float:  # type: ignore[no-untyped-def]
    ssh = (
        f"ssh -p {endpoint.port} -i {key} -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null"
        " -o LogLevel=ERROR -o BatchMode=yes"
    )
    start = time.perf_counter()
    subprocess.run(["rsync", "-a", "-e", ssh, f"{endpoint.user}@{endpoint.host}:{src}", dest], check=True)
    return time.perf_counter() - start
