"""`gpujob state`: reads the account once and prints the job's resources, flagging duplicates."""

from __future__ import annotations

import json
from pathlib import Path

import respx
from click.testing import CliRunner

from gpujob.cli.cmd_state import command
from tests.owners import OTHER, PROJECT, machine, pin_project
from tests.providers.conftest import FAKE_ENV, RP_CANARY
from tests.providers.provider_fakes import RunPodFake

JOB = """\
version: 1
name: bert
platform: runpod
machine:
  gpu: RTX4090
  image: runpod/pytorch:2.4
run:
  command: python train.py
"""


def _seed(fake: RunPodFake) -> None:
    seeds = [
        (machine("bert"), PROJECT),
        (machine("bert"), PROJECT),
        (machine("bert-large"), PROJECT),  # another job of this checkout: never bert's
        (machine("bert", OTHER), OTHER),  # the same job name in another checkout
        (machine("bert"), OTHER),  # our name, another project's env marker
        (machine("other"), PROJECT),
        ("someone-else", None),
    ]
    for name, project in seeds:
        env = {"GPUJOB_PROJECT": project} if project else {}
        fake.new_pod(
            {"name": name, "env": env, "gpu": {"id": "NVIDIA GeForce RTX 4090", "count": 1}}, status="RUNNING"
        )


def test_state_text_and_json(tmp_path: Path, router: respx.Router) -> None:
    fake = RunPodFake(router)
    _seed(fake)
    job = tmp_path / "job.yaml"
    job.write_text(JOB)
    pin_project(tmp_path / ".gpujob")
    runner = CliRunner()
    text = runner.invoke(command, [str(job)], env=FAKE_ENV)
    assert text.exit_code == 0, text.output
    assert "bert (runpod): 2 live resource(s)" in text.output
    assert text.output.count("(DUPLICATE)") == 2 and "duplicated names" in text.output
    assert "2 live resource(s)" in text.output and OTHER not in text.output
    assert "bert-large" not in text.output and "gpujob-other" not in text.output
    assert "someone-else" not in text.output
    assert RP_CANARY not in text.output

    out = runner.invoke(command, [str(job), "--format", "json"], env=FAKE_ENV)
    assert out.exit_code == 0, out.output
    rows = json.loads(out.output)
    assert [(r["kind"], r["name"], r["duplicate"], r["status"]) for r in rows] == [
        ("pod", machine("bert"), True, "running")
    ] * 2


def test_state_missing_key_is_one_clear_line(tmp_path: Path, router: respx.Router) -> None:
    job = tmp_path / "job.yaml"
    job.write_text(JOB)
    env = {**FAKE_ENV, "RUNPOD_API_KEY": ""}
    result = CliRunner().invoke(command, [str(job)], env=env)
    assert result.exit_code == 1
    assert "RUNPOD_API_KEY" in result.output and "Traceback" not in result.output
    assert len(router.calls) == 0
