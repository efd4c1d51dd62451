"""A failing run.smoke stops apply before anything exists on the (simulated) platform."""

from __future__ import annotations

from tests.e2e.e2e_support import CANARY, Project


def test_a_failing_smoke_creates_nothing_and_shows_its_output(project: Project) -> None:
    p = project
    job = p.dir / "job.yaml"
    smoke = "  smoke: env > smoke-env.txt; python3 -c 'import not_installed_here_xyz'\n"
    job.write_text(
        job.read_text().replace("  command: python3 train.py\n", "  command: python3 train.py\n" + smoke)
    )
    out = p.gj("apply", "--auto-approve", check=False)
    assert out.returncode != 0
    assert "run.smoke exited 1" in out.stderr and "not_installed_here_xyz" in out.stderr
    assert p.sim_objects("pods") == [] and p.sim_objects("volumes") == []
    seen = (p.dir / "smoke-env.txt").read_text()
    assert CANARY not in seen, "the smoke saw a run.secrets value"
    assert (
        "GPUJOB_CHECKPOINT_DIR=/" in seen
        and "checkpoints" not in seen.split("GPUJOB_CHECKPOINT_DIR=")[1].split("\n")[0]
    )
