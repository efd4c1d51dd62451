"""fallback: entries validated as whole jobs of their platform, with file:line inside the entry."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpujob.errors import SpecError
from gpujob.jobfile.fallback import chain, effective_spec
from gpujob.spec.load import check_files, load_spec
from tests.failover.jobs import FALLBACK, job_text


def _write(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "job.yaml"
    p.write_text(text)
    return p


def _line_of(text: str, needle: str) -> int:
    """The line of needle inside the fallback block (the job's own machine has spot: true too)."""
    start = text.index("fallback:")
    return text[:start].count("\n") + next(
        i for i, line in enumerate(text[start:].splitlines(), 1) if needle in line
    )


def test_the_issue_job_loads_and_each_entry_is_a_whole_job(tmp_path: Path) -> None:
    loaded = load_spec(_write(tmp_path, job_text()))
    spec = loaded.spec
    assert spec.failover == "auto" and spec.failback == "never" and spec.failover_after == 3
    there = effective_spec(spec, 0)
    assert there.platform == "paperspace" and there.machine.gpu == ["A4000", "A5000"]
    assert there.storage.volume_gb == 50 and there.storage.network_volume is None
    assert there.checkpoint == spec.checkpoint and there.run == spec.run and there.budget == spec.budget
    assert [(i, s.platform) for i, s in chain(spec)] == [(-1, "runpod"), (0, "paperspace")]


def test_a_platform_trap_inside_an_entry_points_at_its_line(tmp_path: Path) -> None:
    bad = FALLBACK.replace("public_ip: dynamic", "public_ip: dynamic, spot: true")
    text = job_text(fallback=bad)
    problems = check_files([_write(tmp_path, text)])
    spot = [p for p in problems if p.key_path == "fallback[0].machine.spot"]
    assert spot, [str(p) for p in problems]
    assert spot[0].line == _line_of(text, "spot: true")
    assert "paperspace" in spot[0].message


def test_a_checkpoint_dir_that_does_not_survive_on_the_entry_platform_is_reported(tmp_path: Path) -> None:
    # On Paperspace the durable disk is the boot disk; a RunPod-only network volume in the entry is refused.
    bad = FALLBACK.replace(
        "{volume_gb: 50, mount: /workspace}", "{mount: /workspace, network_volume: {name: x, size_gb: 20}}"
    )
    problems = check_files([_write(tmp_path, job_text(fallback=bad))])
    assert any(p.key_path.startswith("fallback[0].storage.network_volume") for p in problems), [
        str(p) for p in problems
    ]


def test_an_entry_with_a_shared_block_is_refused(tmp_path: Path) -> None:
    bad = FALLBACK.replace(
        "    storage: {volume_gb: 50, mount: /workspace}\n",
        "    storage: {volume_gb: 50}\n    run: {command: x}\n",
    )
    text = job_text(fallback=bad)
    problems = check_files([_write(tmp_path, text)])
    run = [p for p in problems if p.key_path == "fallback[0].run"]
    assert run and run[0].line == _line_of(text, "run: {command: x}"), [str(p) for p in problems]


def test_an_unknown_gpu_in_an_entry_names_the_entry(tmp_path: Path) -> None:
    text = job_text(fallback=FALLBACK.replace("[A4000, A5000]", "[A4000, NOPE9000]"))
    with pytest.raises(SpecError) as info:
        load_spec(_write(tmp_path, text))
    found = [p for p in info.value.problems if p.key_path.startswith("fallback[0].machine.gpu")]
    assert found and found[0].line == _line_of(text, "NOPE9000"), [str(p) for p in info.value.problems]


def test_auto_needs_continuous_pull(tmp_path: Path) -> None:
    problems = check_files([_write(tmp_path, job_text(pull="on_finish"))])
    assert [p.key_path for p in problems] == ["failover"]
    assert "pull: continuous" in problems[0].message
    assert f":{problems[0].col}: failover: auto needs checkpoint.pull: continuous (" in str(problems[0])


def test_auto_needs_a_price_cap_on_every_platform(tmp_path: Path) -> None:
    text = job_text().replace("budget:\n  max_hourly_usd: 1.0\n", "")
    problems = check_files([_write(tmp_path, text)])
    assert [str(p).split(": ", 1)[1] for p in problems] == [
        "failover: auto needs a price cap: fallback[0].machine.max_price_per_hour or budget.max_hourly_usd"
        " (hint: set budget.max_hourly_usd (it caps every platform), or use failover: ask)"
    ]  # the RunPod machine has its own max_price_per_hour


def test_ask_needs_neither(tmp_path: Path) -> None:
    text = job_text(mode="ask", pull="on_finish").replace("budget:\n  max_hourly_usd: 1.0\n", "")
    assert check_files([_write(tmp_path, text)]) == []


def test_fast_validate_path_defers_to_the_full_one(tmp_path: Path) -> None:
    from gpujob.spec.fastcheck import certainly_valid

    assert certainly_valid([_write(tmp_path, job_text())]) is False  # entries: the full loader's


def test_plan_findings_of_a_job_placed_on_its_entry_point_inside_the_entry(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Moved to Paperspace, the job's machine and storage are the entry's: a finding about them names
    job.yaml:<line> inside fallback[0], not the job's own machine: / storage: lines."""
    import os
    from datetime import UTC, datetime

    from gpujob.live import LiveState
    from gpujob.plan.planner import build_plan
    from gpujob.project import with_projects
    from gpujob.project.placement import Placement, write_placement
    from gpujob.spec.load import load_specs
    from gpujob.state import open_store

    for k in [k for k in os.environ if k.startswith("GPUJOB_STATE")]:
        monkeypatch.delenv(k)
    now = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
    # 3 kept × 20 GB, 80 GB while the next is written: more than the entry's 50 GB disk (U6).
    text = job_text().replace("  keep: 3 ", "  size_gb: 20\n  keep: 3 ")
    text = text.replace("public_ip: dynamic}", "public_ip: none}")  # nothing can reach it (a plan warning)
    p = _write(tmp_path, text)
    write_placement(open_store(p), Placement(job="bert", entry=0, platform="paperspace", since=now))
    (ls,) = with_projects(load_specs([p]), create=True)
    assert ls.entry == 0 and ls.spec.platform == "paperspace"
    jp = build_plan([ls], LiveState(read_at=now), now=now, env={}).jobs[0]
    found = {f.code: f.source for f in jp.findings + [f for a in jp.actions for f in a.findings]}
    u6, unreachable = found.get("U6"), found.get("unreachable")
    assert u6 is not None and unreachable is not None, found
    assert (u6.key, u6.line) == ("fallback[0].storage.volume_gb", _line_of(text, "volume_gb: 50"))
    assert (unreachable.key, unreachable.line) == (
        "fallback[0].machine.public_ip",
        _line_of(text, "public_ip: none"),
    )
    # ...and their fixes name the entry's keys: PS2's `set machine.auto_shutdown` is the entry's to set.
    (ps2,) = [f for f in jp.findings if f.code == "PS2"]
    assert ps2.source.key == "fallback[0].machine" and "set fallback[0].machine.auto_shutdown: 48h" in ps2.fix
    assert "set machine." not in ps2.fix and "fallback[0].fallback" not in ps2.fix, ps2.fix
    # A shared block stays where it is written.
    assert ls.source("checkpoint.dir").line == text[: text.index("  dir: /workspace/ckpt")].count("\n") + 1
    # The job on its own platform points at its own blocks.
    (home,) = load_specs([p])
    assert home.entry == -1 and home.source("storage.volume_gb").line < text[: text.index("fallback:")].count(
        "\n"
    )
