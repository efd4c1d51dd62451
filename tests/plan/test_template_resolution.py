"""Paperspace templates resolved at plan time (real CLI, real HTTP, the simulator): a name that matches
no template is an error finding with the did-you-mean before anything is created, a template given by id
is judged for PS11 as the template it stands for, and a custom template in another data center than the
machine is PS5 — all in the plan, not first at create."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from gpujob.sim.state import PsTemplate
from gpujob.sim.testing import running_simulator

ROOT = Path(__file__).resolve().parents[2]
BASE = (ROOT / "examples" / "paperspace-core" / "job.yaml").read_text()


def plan(tmp_path: Path, env: dict[str, str], job: str) -> tuple[int, dict[str, Any]]:
    d = tmp_path / f"p{abs(hash(job)) % 10**8}"
    d.mkdir()
    (d / "job.yaml").write_text(job)
    done = subprocess.run(
        [sys.executable, "-m", "gpujob", "plan", "--format", "json"],
        cwd=d, env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    return done.returncode, json.loads(done.stdout[done.stdout.find("{") :])


def findings(p: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {f["code"]: f for j in p["jobs"] for f in j["findings"]}


@pytest.fixture
def env(tmp_path: Path) -> Any:
    with running_simulator(tmp_path / "sim", pods=False) as sim:
        sim.engine.state.custom_templates["tcust01"] = PsTemplate(
            id="tcust01", name="my-trainer", region="ca1", parent_machine_id="m-gone", default_size_gb=100
        )
        e = {k: v for k, v in os.environ.items() if not k.startswith("GPUJOB_")}
        e.update(sim.env, NO_COLOR="1", CI="true", WANDB_API_KEY="x")
        yield e


def test_an_unknown_template_is_an_error_in_the_plan_with_the_closest_names(tmp_path: Path, env: Any) -> None:
    code, p = plan(tmp_path, env, BASE.replace("template: ml-in-a-box", "template: ml-in-a-bx"))
    assert code == 1
    f = findings(p)["template"]
    assert f["severity"] == "error" and "'ml-in-a-bx' is not an OS or custom template" in f["summary"]
    assert (
        "did you mean 'ML-in-a-Box' (tkni3aa4)" in f["fix"] and f["action_id"] == "resnet-core.machine.create"
    )
    ok_code, ok = plan(tmp_path, env, BASE)  # the loose spelling of a real name resolves: no finding
    assert ok_code == 0 and "template" not in findings(ok)


def test_a_template_id_is_judged_for_ps11_as_the_template_it_stands_for(tmp_path: Path, env: Any) -> None:
    job = BASE.replace("gpu: [A6000, A5000]", "gpu: [H100-80GB]").replace("ml-in-a-box", "tsimu2004")
    code, p = plan(tmp_path, env, job)
    ps11 = findings(p)["PS11"]
    assert code == 1 and ps11["severity"] == "error"
    assert "template tsimu2004 (Ubuntu 20.04) is Ubuntu 20.04" in ps11["summary"]


def test_a_custom_template_of_another_data_center_is_ps5(tmp_path: Path, env: Any) -> None:
    code, p = plan(tmp_path, env, BASE.replace("template: ml-in-a-box", "template: my-trainer"))
    ps5 = findings(p)["PS5"]
    assert code == 1 and ps5["severity"] == "error" and "lives in ca1" in ps5["summary"]
    assert "machine.regions: [ca1]" in ps5["fix"]
    here, fine = plan(
        tmp_path, env, BASE.replace("regions: [ny2]", "regions: [ca1]").replace("ml-in-a-box", "my-trainer")
    )
    assert here == 0 and "PS5" not in findings(fine)
