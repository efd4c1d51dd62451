"""run.smoke: runs locally, without secrets, in a temporary checkpoint dir, before apply starts anything."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from gpujob.errors import GpujobError
from gpujob.jobfile.model import JobSpec
from gpujob.plan.model import ActionKind
from gpujob.smoke import run_smoke, smoke_before_apply, smoke_env, wanted

SECRET = "s3cr3t-value-never-shown"


def _spec(smoke: str, **run: object) -> JobSpec:
    return JobSpec.model_validate(
        {
            "version": 1,
            "name": "toy",
            "platform": "runpod",
            "machine": {"gpu": ["RTX4090"]},
            "storage": {"volume_gb": 20},
            "checkpoint": {"dir": "/workspace/ckpt", "interval": "10m", "pull_to": "./pulled"},
            "run": {"command": "python3 train.py", "smoke": smoke, "secrets": ["MY_TOKEN_X"], **run},
        }
    )


def test_the_environment_has_no_secret_and_a_temporary_checkpoint_dir(tmp_path: Path) -> None:
    spec = _spec("true", env={"TRAIN_STEPS": "3"})
    env = {
        "MY_TOKEN_X": SECRET,
        "RUNPOD_API_KEY": SECRET,
        "HF_TOKEN": SECRET,
        "PATH": "/usr/bin",
        "LANG": "C",
    }
    out = smoke_env(spec, env, tmp_path / "ck")
    assert SECRET not in out.values()
    assert out["PATH"] == "/usr/bin" and out["LANG"] == "C" and out["TRAIN_STEPS"] == "3"
    assert out["GPUJOB_CHECKPOINT_DIR"] == str(tmp_path / "ck") and out["CUDA_VISIBLE_DEVICES"] == ""


def test_a_smoke_sees_what_smoke_env_gives_and_its_checkpoint_dir_goes_away(tmp_path: Path) -> None:
    dump = tmp_path / "seen.json"
    spec = _spec(
        f'python3 -c \'import json,os; json.dump(dict(os.environ), open("{dump}", "w"))\''
        ' && touch "$GPUJOB_CHECKPOINT_DIR/step_1.pt"'
    )
    env = {"MY_TOKEN_X": SECRET, "PATH": "/usr/bin:/bin"}
    result = run_smoke(spec, tmp_path / "job.yaml", env)
    assert result.ok, result.output
    seen = json.loads(dump.read_text())
    assert SECRET not in seen.values() and "MY_TOKEN_X" not in seen
    ck = Path(seen["GPUJOB_CHECKPOINT_DIR"])
    assert not ck.exists(), "the temporary checkpoint dir outlived the smoke"
    assert not (tmp_path / "pulled").exists(), "a smoke must never write into checkpoint.pull_to"


def test_a_failing_smoke_raises_with_its_output(tmp_path: Path) -> None:
    spec = _spec("echo loading model; echo 'ModuleNotFoundError: no module named torchx' >&2; exit 3")
    loaded = [SimpleNamespace(spec=spec, path=tmp_path / "job.yaml")]
    plan = SimpleNamespace(
        all_actions=lambda: [SimpleNamespace(job="toy", kind=ActionKind.CREATE, resource_kind="pod")]
    )
    with pytest.raises(GpujobError) as err:
        smoke_before_apply(plan, loaded)
    text = str(err.value)
    assert "exited 3" in text and "ModuleNotFoundError" in text and "loading model" in text
    assert "nothing was created" in text


def test_a_smoke_that_hangs_is_stopped_at_its_timeout(tmp_path: Path) -> None:
    spec = _spec("echo started; sleep 30", smoke_timeout="1s")
    result = run_smoke(spec, tmp_path / "job.yaml", {"PATH": "/usr/bin:/bin"})
    assert result.returncode is None and not result.ok and result.seconds < 20


def test_only_a_plan_that_starts_something_runs_the_smoke() -> None:
    def plan(*kinds: tuple[ActionKind, str]) -> SimpleNamespace:
        return SimpleNamespace(
            all_actions=lambda: [SimpleNamespace(job="toy", kind=k, resource_kind=r) for k, r in kinds]
        )

    assert wanted(plan((ActionKind.LAUNCH, "pod")), "toy")
    assert wanted(plan((ActionKind.START, "pod")), "toy")
    assert not wanted(plan((ActionKind.STOP, "pod")), "toy")
    assert not wanted(plan((ActionKind.CREATE, "network_volume")), "toy")
    assert not wanted(plan((ActionKind.LAUNCH, "pod")), "other")
