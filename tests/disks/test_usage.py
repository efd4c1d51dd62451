"""Disk use as df reports it: parsing, what fills first, and when to warn."""

from __future__ import annotations

from gpujob.disks.usage import DiskUsage, parse, warnings

DF = """Filesystem     1-blocks       Used  Available Capacity Mounted on
mfs#eu-ro-1  10737418240 9771221811 966196429      92% /workspace
overlay       5368709120 1073741824 4294967296      20% /
@@inodes
Filesystem      Inodes   IUsed   IFree IUse% Mounted on
mfs#eu-ro-1          0       0       0     - /workspace
overlay         327680  320000    7680   98% /
"""


def test_df_rows_come_back_per_path_with_bytes_and_inodes() -> None:
    ws, root = parse(DF, ["/workspace", "/"])
    assert ws == DiskUsage("/workspace", 9771221811, 10737418240, None, None)  # no inode count: not guessed
    assert root.used_inodes == 320000 and root.total_inodes == 327680
    assert round(ws.byte_fraction, 2) == 0.91 and root.fullest == ("inodes", 320000 / 327680)


def test_warnings_at_90_percent_name_what_fills_first() -> None:
    lines = warnings(parse(DF, ["/workspace", "/"]))
    assert lines[0].startswith("/workspace is 91% full (bytes)") and "U6" in lines[0]
    assert lines[1].startswith("/ is 98% full (inodes)") and "U7" in lines[1] and "RP11" in lines[1]
    assert warnings([DiskUsage("/", 10, 100, 1, 100)]) == []


def test_an_unreadable_df_gives_no_rows() -> None:
    assert parse("df: /workspace: No such file or directory\n@@inodes\n", ["/workspace", "/"]) == []


def test_a_filling_disk_gets_the_du_of_its_caches_lc04() -> None:
    """LC0.4: once a disk is past the warning line, the caches on it are measured (`du`), biggest first,
    each on the disk it fills; a roomy disk costs no second round trip."""
    import asyncio
    from types import SimpleNamespace

    from gpujob.disks.usage import read_disks
    from tests.apply.fakes import make_spec

    du = "12000000000\t/workspace/.cache\n3000000000\t/root/.cache\n500\t/tmp\n"
    calls: list[str] = []

    class Remote:
        async def run(self, cmd: str, **_: object) -> SimpleNamespace:
            calls.append(cmd)
            return SimpleNamespace(stdout=DF if cmd.startswith("df") else du)

    ws, root = asyncio.run(read_disks(Remote(), make_spec()))
    assert ws.caches == (("/workspace/.cache", 12000000000),)
    assert root.caches == (("/root/.cache", 3000000000), ("/tmp", 500))
    said = warnings([ws, root])
    assert "caches on it: /workspace/.cache 12.0 GB" in said[0] and "/root/.cache 3.0 GB" in said[1]
    assert "du -sx" in calls[1] and len(calls) == 2
    roomy = DF.replace("9771221811", "1000").replace("320000", "100")
    calls.clear()
    DFroomy = roomy

    class Quiet(Remote):
        async def run(self, cmd: str, **_: object) -> SimpleNamespace:
            calls.append(cmd)
            return SimpleNamespace(stdout=DFroomy)

    assert all(u.caches == () for u in asyncio.run(read_disks(Quiet(), make_spec()))) and len(calls) == 1
