"""Progress of real transfers against a real sshd: the counts the hooks see, and what a log shows."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

from gpujob.apply.progress import JobReporter, LineHooks, RecordingHooks
from gpujob.apply.runtime import Target, pull, transfer_reporting
from gpujob.apply.sshapi import SSHApi
from gpujob.live import LiveResource, SSHEndpoint
from gpujob.ssh.pull import pull_checkpoints
from gpujob.ssh.sync import sync_tree
from gpujob.ssh.testing import SSHD
from tests.apply.fakes import FakeClock, make_spec
from tests.ssh.ssh_kit import session


def rising_to_total(transfers: list[tuple[str, str, int, int]], label: str, total: int) -> None:
    counts = [done for _, lab, done, _ in transfers if lab == label]
    totals = {t for _, lab, _, t in transfers if lab == label}
    assert counts, f"no {label} progress reported"
    assert counts == sorted(counts), counts
    assert totals == {total} and counts[-1] == total


def write_tree(root: Path) -> int:
    (root / "data").mkdir(parents=True)
    sizes = {"train.py": 2_000, "data/a.bin": 1_500_000, "data/b.bin": 700_000, "data/c.bin": 30}
    for name, size in sizes.items():
        (root / name).write_bytes(os.urandom(size))
    return sum(sizes.values())


async def _sync(server: SSHD, state: Path, src: Path, dest: Path, note: JobReporter) -> int:
    async with session(server, state) as remote:
        with transfer_reporting("sync", note) as progress:
            stats = await sync_tree(remote, src, str(dest), [], progress=progress)
    return stats.bytes_sent


def test_a_real_sync_reports_rising_counts_ending_at_the_total(sshd: SSHD, state: Path, tmp_path: Path):
    src, dest = tmp_path / "src", tmp_path / "remote code"
    total = write_tree(src)
    hooks = RecordingHooks()
    sent = asyncio.run(_sync(sshd, state, src, dest, JobReporter(hooks, "toy")))
    assert sent == total
    rising_to_total(hooks.transfers, "sync", total)
    assert hooks.events[-1] == ("toy", "settled", "sync")
    assert (dest / "data" / "a.bin").read_bytes() == (src / "data" / "a.bin").read_bytes()


def test_a_real_sync_in_a_log_is_a_few_lines_with_its_size(sshd: SSHD, state: Path, tmp_path: Path):
    src, dest = tmp_path / "src", tmp_path / "remote code"
    write_tree(src)
    lines: list[str] = []
    asyncio.run(_sync(sshd, state, src, dest, JobReporter(LineHooks(lines.append), "toy")))
    assert 1 <= len(lines) <= 6, lines
    assert lines[0] == "  toy: sync: 2.2 MB to transfer"
    assert lines[-1].startswith("  toy: sync: 2.2 MB in ") and lines[-1].endswith("/s)")
    # Unchanged since: nothing to send, nothing said.
    again: list[str] = []
    asyncio.run(_sync(sshd, state, src, dest, JobReporter(LineHooks(again.append), "toy")))
    assert again == []


def test_a_real_pull_reports_rising_counts_ending_at_the_total(sshd: SSHD, state: Path, tmp_path: Path):
    rdir, ldir = tmp_path / "ckpt", tmp_path / "local"
    rdir.mkdir()
    (rdir / "step_1.pt").write_bytes(os.urandom(900_000))
    (rdir / "step_2.pt").write_bytes(os.urandom(1_300_000))
    hooks = RecordingHooks()

    async def go() -> None:
        async with session(sshd, state) as remote:
            with JobReporter(hooks, "toy").transfer("pull") as progress:
                await pull_checkpoints(remote, str(rdir), ldir, verify=None, progress=progress)

    asyncio.run(go())
    rising_to_total(hooks.transfers, "pull", 2_200_000)
    assert (ldir / "step_2.pt").read_bytes() == (rdir / "step_2.pt").read_bytes()


class OneMachine:
    """Just enough provider for runtime.pull: the machine is running and its sshd is `endpoint`."""

    platform = "runpod"

    def __init__(self, resource: LiveResource, endpoint: SSHEndpoint) -> None:
        self.resource, self.endpoint = resource, endpoint

    async def get(self, kind: str, resource_id: str) -> LiveResource:
        return self.resource

    def ssh_endpoint(self, resource: LiveResource) -> SSHEndpoint:
        return self.endpoint


def test_apply_pull_step_draws_the_transfer_through_the_jobs_reporter(
    sshd: SSHD, state: Path, tmp_path: Path
):
    """runtime.pull gets the job's reporter as its `note` (as steps.pull passes ctx.note)."""
    rdir = tmp_path / "ckpt"
    rdir.mkdir()
    (rdir / "step_7.pt").write_bytes(os.urandom(1_200_000))
    spec = make_spec(checkpoint={"dir": str(rdir), "pull_to": "pulled", "verify": "true {file}"})
    machine = LiveResource(platform="runpod", kind="pod", id="p1", name="gpujob-toy", status="running")
    target = Target(
        spec=spec,
        spec_path=tmp_path / "job.yaml",
        provider=OneMachine(machine, sshd.endpoint),  # type: ignore[arg-type]
        resource=machine,
        state_dir=state,
    )
    hooks, lines = RecordingHooks(), []
    ssh = SSHApi.default()
    record = asyncio.run(pull(target, ssh, FakeClock(), JobReporter(hooks, "toy")))  # type: ignore[arg-type]
    assert record.complete and [f.name for f in record.files] == ["step_7.pt"]
    rising_to_total(hooks.transfers, "pull", 1_200_000)
    asyncio.run(pull(target, ssh, FakeClock(), JobReporter(LineHooks(lines.append), "toy")))  # type: ignore[arg-type]
    assert lines == []  # already here and verified: nothing transferred, nothing said
