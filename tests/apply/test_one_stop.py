"""Every stop gpujob makes goes through one place, gpujob.apply.quiesce.stop: the job's processes (the
run's tree and every other process carrying its GPUJOB_JOB) get SIGTERM and their grace, then the
provider's stop. The fake provider refuses a stop that did not come through it (tests/apply/fakes.py),
so a new path cannot skip the quiesce silently; here each path is driven and the order checked."""

from __future__ import annotations

import ast
import asyncio
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

import gpujob
from gpujob.apply import quiesce, steps
from gpujob.plan.model import ActionKind
from gpujob.ssh.workload import StoppedProcess, WorkloadQuiesce
from tests.apply.fakes import FakeSSH, action
from tests.apply.test_gate import world

ROOT = Path(gpujob.__file__).parent
ONE = ROOT / "apply" / "quiesce.py"


def _awaited_stops(path: Path) -> list[int]:
    """Lines of `await <something>.stop(<machine>)`: a provider's stop (a spinner's .stop() takes no
    argument and is not awaited)."""
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Await) and isinstance(node.value, ast.Call):
            f = node.value.func
            if isinstance(f, ast.Attribute) and f.attr == "stop" and (node.value.args or node.value.keywords):
                out.append(node.lineno)
    return out


def test_only_the_one_quiesce_calls_a_providers_stop() -> None:
    found = {
        str(p.relative_to(ROOT)): lines
        for p in ROOT.rglob("*.py")
        if p.parts[len(ROOT.parts)] not in ("sim", "providers") and (lines := _awaited_stops(p))
    }
    assert found == {"apply/quiesce.py": _awaited_stops(ONE)} and len(found["apply/quiesce.py"]) == 1, found


def test_the_fake_provider_refuses_a_stop_that_skipped_the_quiesce(tmp_path: Path) -> None:
    ctx, prov, _ = world(tmp_path)
    with pytest.raises(AssertionError, match=r"did not go through apply\.quiesce\.stop"):
        asyncio.run(prov.stop(ctx.machine))


def _order(ssh: FakeSSH, prov: Any) -> list[str]:
    """quiesce_run, quiesce_workload and the provider's stop, in the order they happened."""
    seen: list[str] = []
    run, work, stop = ssh.quiesce_run, ssh.quiesce_workload, prov.stop

    async def q_run(*a: Any, **k: Any) -> Any:
        seen.append("run")
        return await run(*a, **k)

    async def q_work(*a: Any, **k: Any) -> Any:
        seen.append("workload")
        return await work(*a, **k)

    async def p_stop(resource: Any) -> Any:
        seen.append("stop")
        return await stop(resource)

    ssh.quiesce_run, ssh.quiesce_workload, prov.stop = q_run, q_work, p_stop  # type: ignore[method-assign]
    return seen


def _ctx(tmp_path: Path, **spec: Any) -> tuple[Any, Any, FakeSSH, list[str]]:
    ctx, prov, ssh = world(tmp_path, **spec)
    seen = _order(ssh, prov)
    ctx.ssh = ssh.api()
    return ctx, prov, ssh, seen


def test_apply_stop_quiesces_the_workload_with_the_job_files_grace_then_stops(tmp_path: Path) -> None:
    ctx, _prov, ssh, seen = _ctx(
        tmp_path, checkpoint={"dir": "/workspace/ckpt", "interval": "1m", "write_time": "40s"}
    )
    ssh.workload = WorkloadQuiesce(state="killed", stopped=[StoppedProcess(pid=77, name="uploader")])
    out = asyncio.run(steps.stop(ctx, action("toy", ActionKind.STOP, resource_id="pod1")))
    assert seen == ["run", "workload", "stop"]
    assert ssh.workload_quiesced == [85.0] == ssh.quiesced  # 2 × checkpoint.write_time + 5
    assert "stopped (SIGKILL after the grace): uploader (77)" in out.detail, out.detail
    assert ctx.machine.status == "stopped"


def test_a_preflight_refused_host_is_quiesced_before_its_stop(tmp_path: Path) -> None:
    from gpujob.preflight import hook

    ctx, _prov, _ssh, seen = _ctx(tmp_path)
    asyncio.run(hook._stop(ctx, action("toy", ActionKind.LAUNCH, "run", resource_id="pod1")))
    assert seen == ["run", "workload", "stop"] and ctx.machine.status == "stopped"


def test_a_machine_started_only_for_the_gates_look_is_stopped_without_a_quiesce(tmp_path: Path) -> None:
    from gpujob.apply.reach_gate import stop_again

    ctx, prov, _ssh, seen = _ctx(tmp_path)
    asyncio.run(stop_again(ctx, ctx.machine, True))
    assert seen == ["stop"] and ("stop", "pod1") in prov.calls  # fresh: named, not silent


def test_watchs_quiesce_before_its_final_pull_reaches_the_workload(tmp_path: Path) -> None:
    from gpujob.watch.apply import quiesce as watch_quiesce

    ctx, prov, ssh, seen = _ctx(tmp_path)
    ssh.workload = WorkloadQuiesce(state="stopped", stopped=[StoppedProcess(pid=9, name="evaler")])
    job = SimpleNamespace(loaded=SimpleNamespace(spec=ctx.spec, path=ctx.spec_path), state_dir=ctx.state_dir)
    said = asyncio.run(watch_quiesce(job, ctx.machine, prov, ssh=ctx.ssh, clock=ctx.clock))
    assert seen == ["run", "workload"] and "evaler (9)" in said, said


def test_a_stuck_helper_does_not_block_the_stop_and_is_named(tmp_path: Path) -> None:
    ctx, _prov, ssh, seen = _ctx(tmp_path)
    left = [StoppedProcess(pid=5, name="stubborn")]
    ssh.workload = WorkloadQuiesce(state="stuck", stopped=left, left=left)
    machine, said = asyncio.run(quiesce.stop_for(ctx, ctx.machine))
    assert seen == ["run", "workload", "stop"] and machine.status == "stopped"
    assert "still running after SIGKILL: stubborn (5)" in said
