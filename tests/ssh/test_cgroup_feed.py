"""The launcher feeds the GPU (U40, U43) and the status read sees the cgroup (U41), in a real bash with
a cgroup directory of our own (GPUJOB_CGROUP_DIR), no SSH."""

from __future__ import annotations

import subprocess
from pathlib import Path

from gpujob.plan.checkpoint_actions import _fed_env
from gpujob.ssh import cgroup
from gpujob.ssh.launcher import render_launcher
from tests.apply.fakes import make_spec


def _sh(script: str, cg: Path, jobdir: Path) -> dict[str, str]:
    out = subprocess.run(
        ["bash", "-c", script],
        env={"GPUJOB_CGROUP_DIR": str(cg), "PATH": "/usr/bin:/bin", "J": str(jobdir)},
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return dict(line.split("=", 1) for line in out.splitlines() if "=" in line)


def test_the_status_lines_read_the_cgroup_and_the_runs_start(tmp_path: Path) -> None:
    cg, j = tmp_path / "cg", tmp_path / "job"
    cg.mkdir()
    j.mkdir()
    (cg / "memory.max").write_text("34359738368\n")
    (cg / "memory.events").write_text("low 0\nhigh 0\nmax 2\noom 1\noom_kill 3\n")
    (cg / "cpu.max").write_text("250000 100000\n")
    (j / "oom_kill.start").write_text("2\n")
    (j / "ooms").write_text("2026-12-07T00:00:00Z\n")
    kv = _sh(cgroup.status_lines() + 'echo "cpus=$(cg_cpus)"', cg, j)
    assert kv["cpus"] == "3"  # 2.5 vCPUs of quota: 3 threads
    r = cgroup.readings(kv)
    assert r["memory_limit"] == 32 * 1024**3 and r["oom_kills"] == 1 and r["earlier_ooms"] == 1
    (cg / "memory.max").write_text("max\n")
    (cg / "cpu.max").write_text("max 100000\n")
    kv = _sh(cgroup.status_lines() + 'echo "cpus=$(cg_cpus)"', cg, j)
    assert kv["mem_max"] == "" and kv["cpus"] == ""  # no limit, no quota: nothing claimed


def test_the_launcher_sets_the_thread_pools_and_unbuffered_only_where_run_env_does_not() -> None:
    text = render_launcher(make_spec(run={"command": "python t.py", "env": {"MKL_NUM_THREADS": "2"}}))
    assert (
        'export OMP_NUM_THREADS="$__gpujob_cpus"' in text and 'MKL_NUM_THREADS="$__gpujob_cpus"' not in text
    )
    assert "export PYTHONUNBUFFERED=1" in text and "export MKL_NUM_THREADS=2" in text
    assert text.index("export PYTHONUNBUFFERED=1") < text.index("export MKL_NUM_THREADS=2")  # run.env last
    mine = {"OMP_NUM_THREADS": "8", "MKL_NUM_THREADS": "8", "PYTHONUNBUFFERED": "0"}
    quiet = render_launcher(make_spec(run={"command": "python t.py", "env": mine}))
    assert "__gpujob_cpus" not in quiet and "export PYTHONUNBUFFERED=1" not in quiet
    assert _fed_env(mine) == ""
    assert _fed_env({"OMP_NUM_THREADS": "8"}).startswith(
        "environment: MKL_NUM_THREADS = the cgroup's CPU quota"
    )
