"""One round to the right hint: the first run of validate names the real problem, not a step on the
way to it (#41)."""

from __future__ import annotations

from gpujob.jobfile.rules import one_or_many
from gpujob.spec.load import check_files
from tests.spec.conftest import RUNPOD_JOB


def problems(write, text: str) -> list[str]:
    return [f"{p.key_path}: {p.message} (hint: {p.hint})" for p in check_files([write(text)])]


def test_an_unquoted_number_for_a_gpu_gets_the_did_you_mean_at_once(write) -> None:
    one = problems(write, RUNPOD_JOB.replace("gpu: [A100-80GB, H100-80GB]", "gpu: 4090"))
    assert one == ["machine.gpu: unknown GPU '4090' on runpod (hint: did you mean 'RTX4090'?)"]
    listed = problems(write, RUNPOD_JOB.replace("gpu: [A100-80GB, H100-80GB]", "gpu: [4090, A6000]"))
    assert listed == ["machine.gpu[0]: unknown GPU '4090' on runpod (hint: did you mean 'RTX4090'?)"]
    assert one_or_many(True) is True and one_or_many(4090) == ["4090"]  # a boolean is no GPU name


def test_a_negative_duration_must_be_positive(write) -> None:
    (line,) = problems(write, RUNPOD_JOB.replace("interval: 15m", "interval: -10m"))
    assert line.startswith("checkpoint.interval: '-10m' must be positive")
    assert "not a duration" not in line and "such as 10m" in line


def test_a_problem_that_follows_from_a_typo_says_which(write) -> None:
    text = RUNPOD_JOB.replace("checkpoint:", "chekpoint:") + (
        "failover: auto\nfallback:\n  - platform: paperspace\n    machine: {gpu: [A4000], template: t0nspur5}\n"
        "budget: {max_hourly_usd: 3}\n"
    )
    found = problems(write, text)
    assert found[0] == "chekpoint: unknown key 'chekpoint' (hint: did you mean 'checkpoint'?)"
    (follow,) = [p for p in found if p.startswith("failover:")]
    assert "auto needs checkpoint.pull: continuous" in follow
    assert "it follows from the unknown key 'chekpoint' at line 10 (meant as 'checkpoint')" in follow
    unrelated = problems(
        write, RUNPOD_JOB.replace("checkpoint:", "chekpoint:").replace("name: bert", "name: B")
    )
    assert not any("follows from" in p for p in unrelated)
