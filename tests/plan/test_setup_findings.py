"""U29: an install in run.setup by name without a pin is warned of; files, locks and exact pins are not."""

from __future__ import annotations

from collections.abc import Callable

from gpujob.plan.planner import build_plan
from gpujob.plan.setup_findings import unpinned
from tests.plan.plan_helpers import NOW, RUNPOD_JOB, live

Write = Callable[..., object]


def test_which_installs_pin_nothing() -> None:
    assert unpinned("pip install torch transformers==4.44.0 'accelerate>=0.30'") == [
        "torch",
        "accelerate>=0.30",
    ]
    assert unpinned("apt-get update && python -m pip install -U wandb; echo ok") == ["wandb"]
    assert unpinned("uv pip install -i https://x/simple numpy==2.0.1 ./pkg dist/a.whl") == []
    assert unpinned("pip install -r requirements.txt") == [] and unpinned("pip install -e .") == []
    assert unpinned("conda install -c conda-forge cudatoolkit=12.1 mamba") == ["mamba"]
    assert unpinned("pip install 'git+https://github.com/x/y@v1'") == []
    assert unpinned("echo no install here") == []


def test_an_unpinned_setup_install_warns_with_the_lock_file_fix(write_job: Write) -> None:
    text = RUNPOD_JOB.replace("run:\n", "run:\n  setup: pip install peft datasets==2.20.0\n", 1)
    assert "setup:" in text
    plan = build_plan([write_job(text)], live(), now=NOW, env={})
    (f,) = [f for f in plan.all_findings() if f.code == "U29"]
    assert f.severity == "warning" and f.summary.startswith(
        "run.setup installs peft without a pinned version"
    )
    assert "lock file" in f.fix and f.source is not None and f.source.key == "run.setup"
    pinned = RUNPOD_JOB.replace("run:\n", "run:\n  setup: pip install peft==0.12.0\n", 1)
    assert not [
        f for f in build_plan([write_job(pinned)], live(), now=NOW, env={}).all_findings() if f.code == "U29"
    ]
