"""Catalogue section A (job.yaml and other user input): real files on disk through the real CLI.

Commands that talk to a platform (plan, state, cost) run against the recording simulator, so "refused
before any API call" is checked on the wire: the simulator saw zero requests."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpujob.errors import SpecError
from gpujob.jobfile.model import NAME_PATTERN, JobSpec
from gpujob.spec.load import load_spec
from tests.examples import examples
from tests.reliability.reliability_kit import (
    IMAGE,
    PAPERSPACE_JOB,
    RUNPOD_JOB,
    SECRET_CANARY,
    RecordingSim,
    cli,
    subprocess_cli,
    write_job,
)

PROBLEM_LINE = re.compile(r"^(.*/)?job\.yaml:\d+:\d+: ")


def refused(project: Path, env: dict[str, str], rsim: RecordingSim, *commands: list[str]) -> list[str]:
    """Run each command; every one must exit 1 with file:line:col problems and no traceback, and the
    simulator must have seen no request at all. Returns the problem lines of the first."""
    first: list[str] = []
    for args in commands:
        run = cli(args, cwd=project, env=env)
        assert run.exit_code == 1, (args, run.output)
        assert "Traceback" not in run.output
        lines = [ln for ln in run.output.splitlines() if PROBLEM_LINE.match(ln)]
        assert lines, (args, run.output)
        first = first or lines
    assert rsim.api_requests() == [], [f"{w.method} {w.path}" for w in rsim.api_requests()]
    return first


def problems(path: Path) -> list[str]:
    with pytest.raises(SpecError) as info:
        load_spec(path)
    return [str(p) for p in info.value.problems]


# ---- A1 malformed YAML: file:line:col, exit code, zero requests


@pytest.mark.parametrize(
    ("text", "line"),
    [
        ("version: 1\nname: 'bert\nplatform: runpod\n", 2),  # unclosed quote
        ("version: 1\nmachine:\n\tgpu: A100-80GB\n", 3),  # tab indentation
        ("version: 1\nmachine: {gpu: [A100-80GB, image: x\n", 2),  # bad flow mapping
    ],
)
def test_a1_malformed_yaml_is_refused_before_any_request(
    tmp_path: Path, env: dict[str, str], rsim: RecordingSim, text: str, line: int
) -> None:
    project = tmp_path / "project"
    write_job(project, text)
    lines = refused(project, env, rsim, ["validate"], ["plan"], ["state"], ["cost"])
    assert "malformed YAML" in lines[0] and int(lines[0].split("job.yaml:")[1].split(":")[0]) >= line


# ---- A2 duplicate keys: both line numbers


@pytest.mark.parametrize(
    ("insert_after", "extra", "key"),
    [
        ("  gpu: A100-80GB\n", "  gpu: H100-80GB\n", "machine.gpu"),
        ("  command: python train.py\n", "  env:\n    A: '1'\n    A: '2'\n", "run.env.A"),
        (RUNPOD_JOB, "storage:\n  volume_gb: 500\n", "storage"),
    ],
)
def test_a2_duplicate_keys_name_both_lines(
    tmp_path: Path, env: dict[str, str], rsim: RecordingSim, insert_after: str, extra: str, key: str
) -> None:
    text = RUNPOD_JOB.replace(insert_after, insert_after + extra, 1)
    project = tmp_path / "project"
    job = write_job(project, text)
    lines = refused(project, env, rsim, ["validate"], ["plan"])
    dup = [ln for ln in lines if "duplicate key" in ln]
    assert len(dup) == 1 and f": {key}: " in dup[0], lines
    second = int(dup[0].split("job.yaml:")[1].split(":")[0])
    first = int(re.search(r"first defined at line (\d+)", dup[0]).group(1))  # type: ignore[union-attr]
    assert first < second
    rows = job.read_text().splitlines()
    leaf = key.rpartition(".")[2]
    assert leaf in rows[first - 1] and leaf in rows[second - 1]


# ---- A3 YAML bomb, A4 huge or deep input: refused fast, no traceback, no request


def test_a3_billion_laughs_through_plan_in_a_time_budget(
    tmp_path: Path, env: dict[str, str], rsim: RecordingSim
) -> None:
    lines = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for prev, name in zip("abcdefgh", "bcdefghi", strict=True):
        lines.append(f"{name}: &{name} [" + ",".join([f"*{prev}"] * 9) + "]")
    project = tmp_path / "project"
    write_job(project, "\n".join(lines) + "\n")
    started = time.monotonic()
    run = subprocess_cli(["plan"], cwd=project, env=env, timeout=20)
    assert time.monotonic() - started < 10
    assert run.exit_code == 1 and "aliases are expanded" in run.stderr + run.stdout
    assert "Traceback" not in run.stderr and rsim.api_requests() == []


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("a: " + "x" * (2 * 1024 * 1024) + "\n", "too large"),  # a 2 MiB string
        ("a:\n" + "- 1\n" * 200_000, "document too large"),  # 200k list items inside the size cap
        ("a: " + "[" * 10_000 + "]" * 10_000 + "\n", "nested too deeply"),  # 10k levels
        ("a: " + "{b: " * 5_000 + "1" + "}" * 5_000 + "\n", "nested too deeply"),
    ],
)
def test_a4_huge_or_deep_input_is_a_clear_problem(
    tmp_path: Path, env: dict[str, str], rsim: RecordingSim, text: str, needle: str
) -> None:
    project = tmp_path / "project"
    write_job(project, text)
    started = time.monotonic()
    lines = refused(project, env, rsim, ["plan"])
    assert time.monotonic() - started < 10
    assert any(needle in ln for ln in lines), lines


# ---- A5 implicit typing (the Norway problem)


def test_a5_norway_region_stays_text(tmp_path: Path) -> None:
    # YAML 1.1 reads NO as false; gpujob's loader must keep the text the user wrote.
    text = PAPERSPACE_JOB.replace("regions: [ny2]", "regions: [NO, ny2]")
    found = problems(write_job(tmp_path, text))
    assert any("machine.regions[0]" in p and "'NO'" in p for p in found), found
    assert not any("false" in p.lower() for p in found), found


@pytest.mark.parametrize(
    ("line", "key"),
    [
        ("  env: {PYTHON: 3.10}", "run.env.PYTHON"),  # 3.10 would become 3.1
        ("  env: {MODE: 0755}", "run.env.MODE"),  # an octal-looking number
        ("  env: {ENABLED: true}", "run.env.ENABLED"),
    ],
)
def test_a5_non_text_values_where_text_is_expected_are_refused_with_a_line(
    tmp_path: Path, line: str, key: str
) -> None:
    text = RUNPOD_JOB.replace("  command: python train.py\n", f"  command: python train.py\n{line}\n")
    found = problems(write_job(tmp_path, text))
    assert any(":15:" in p and f"{key}: expected text" in p for p in found), found


def test_a5_gpu_as_a_bare_number_is_refused(tmp_path: Path) -> None:
    found = problems(write_job(tmp_path, RUNPOD_JOB.replace("gpu: A100-80GB", "gpu: 3090")))
    assert any(p.startswith(f"{tmp_path}/job.yaml:5:") and "machine.gpu" in p for p in found), found


def test_a5_yes_no_words_keep_their_meaning_only_for_booleans(tmp_path: Path) -> None:
    text = RUNPOD_JOB.replace("machine:\n", "machine:\n  spot: on\n")
    assert load_spec(write_job(tmp_path, text)).spec.machine.spot is True
    text = RUNPOD_JOB.replace("machine:\n", "machine:\n  spot: maybe\n")
    assert any(
        "machine.spot: expected true, false or prefer" in p for p in problems(write_job(tmp_path, text))
    )


# ---- A6 unknown or misspelled keys, above all safety keys


@pytest.mark.parametrize(
    ("section", "typo", "suggested"),
    [
        ("budget:\n  max_cost_usd: 5\n", "budget.max_cost_usd", "max_total_usd"),
        ("budget:\n  max_hourly: 2\n", "budget.max_hourly", "max_hourly_usd"),
        ("teardown:\n  on_finsh: stop\n", "teardown.on_finsh", "on_finish"),
        ("machine2:\n  spot: true\n", "machine2", "machine"),
    ],
)
def test_a6_misspelled_safety_keys_are_refused_with_a_suggestion(
    tmp_path: Path, env: dict[str, str], rsim: RecordingSim, section: str, typo: str, suggested: str
) -> None:
    project = tmp_path / "project"
    write_job(project, RUNPOD_JOB + section)
    lines = refused(project, env, rsim, ["validate"], ["plan"])
    hit = [ln for ln in lines if f": {typo}: unknown key" in ln]
    assert hit and f"did you mean '{suggested}'" in hit[0], lines


# ---- A7 hostile names, A8 tmux-reserved characters

HOSTILE = [
    "a; rm -rf ~",
    "$(curl x|sh)",
    "`id`",
    "a\nok: 1 file(s) valid",  # would forge an output line if printed raw
    "-rf",
    "bert\u202etxt",  # Unicode right-to-left override
    "a" * 300,
    "",
    "exp.1",  # A8: tmux forbids '.' and ':' in session names
    "a:b",
    "Bert",
    "bert_1",
    "1bert",
]


@pytest.mark.parametrize("name", HOSTILE)
def test_a7_a8_hostile_names_are_refused_in_one_escaped_line(tmp_path: Path, name: str) -> None:
    import json

    for where, text in (
        ("name", RUNPOD_JOB.replace("name: bert", f"name: {json.dumps(name)}")),
        (
            "storage.network_volume.name",
            RUNPOD_JOB.replace(
                "  volume_gb: 100\n",
                f"  volume_gb: 100\n  network_volume: {{name: {json.dumps(name)}, size_gb: 50}}\n",
            ),
        ),
    ):
        job = write_job(tmp_path, text)
        run = cli(["validate", str(job)], cwd=tmp_path, env={})
        assert run.exit_code == 1, run.output
        lines = run.stdout.splitlines()
        assert len(lines) == 2 and lines[-1] == "1 problem(s) in 1 file(s)", run.stdout
        assert f": {where}: " in lines[0]
        assert lines[0].isprintable()  # newlines, RTL overrides and control characters arrive escaped


@settings(max_examples=examples(200), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(max_size=50))
def test_a7_any_accepted_name_is_a_safe_shell_word(name: str) -> None:
    base = {"version": 1, "platform": "runpod", "machine": {"gpu": "A100-80GB", "image": IMAGE}}
    try:
        spec = JobSpec.model_validate({**base, "name": name})
    except ValueError:
        return
    assert re.fullmatch(NAME_PATTERN, spec.name)
    import shlex

    assert shlex.split(f"tmux has-session -t =gpujob-{spec.name}")[-1] == f"=gpujob-{spec.name}"
    assert not set(spec.name) & set(".:;$`'\"\\ \n/")


# ---- A9 env values with shell metacharacters; NUL refused


def test_a9_metacharacters_arrive_byte_for_byte(tmp_path: Path) -> None:
    import json

    values = {
        "WANDB_TAGS": "a b'; echo pwned",
        "HOME_REF": "$HOME",
        "MULTI": "line1\nline2",
        "BACKTICK": '`id` $(id) \\ "q"',
        "BIG": "x" * 100_000,
    }
    env_yaml = "  env:\n" + "".join(f"    {k}: {json.dumps(v)}\n" for k, v in values.items())
    text = RUNPOD_JOB.replace("  command: python train.py\n", "  command: python train.py\n" + env_yaml)
    spec = load_spec(write_job(tmp_path, text)).spec
    assert spec.run is not None and spec.run.env == values


def test_a9_nul_in_an_env_value_is_refused(tmp_path: Path) -> None:
    text = RUNPOD_JOB.replace(
        "  command: python train.py\n", '  command: python train.py\n  env: {X: "a\\0b"}\n'
    )
    found = problems(write_job(tmp_path, text))
    assert len(found) == 1 and "run.env.X" in found[0] and "NUL" in found[0], found


# ---- A10 path traversal in checkpoint and sync paths


@pytest.mark.parametrize(
    ("key", "line", "value"),
    [
        ("checkpoint.dir", "  dir: /workspace/ckpt", "  dir: /workspace/../../root/.ssh"),
        ("checkpoint.pull_to", "  interval: 15m", "  interval: 15m\n  pull_to: ../../.."),
        ("checkpoint.pull_to", "  interval: 15m", "  interval: 15m\n  pull_to: /etc"),
        ("checkpoint.pull_to", "  interval: 15m", "  interval: 15m\n  pull_to: ~/.ssh"),
        ("checkpoint.pull_to", "  interval: 15m", "  interval: 15m\n  pull_to: ckpt/../../x"),
        ("storage.mount", "  volume_gb: 100", "  volume_gb: 100\n  mount: /workspace/.."),
        (
            "run.sync.dest",
            "  command: python train.py",
            "  command: python train.py\n  sync: {dest: /workspace/../etc}",
        ),
    ],
)
def test_a10_paths_that_escape_are_refused_at_parse(tmp_path: Path, key: str, line: str, value: str) -> None:
    text = RUNPOD_JOB.replace(line, value, 1)
    assert text != RUNPOD_JOB
    found = problems(write_job(tmp_path, text))
    assert len(found) == 1 and f": {key}: " in found[0], found


def test_a10_ordinary_paths_still_load(tmp_path: Path) -> None:
    text = RUNPOD_JOB.replace("  interval: 15m", "  interval: 15m\n  pull_to: ./out/ckpt..old")
    assert load_spec(write_job(tmp_path, text)).spec.checkpoint.pull_to == "./out/ckpt..old"  # type: ignore[union-attr]


# ---- A12 secret literal in job.yaml: refused without echoing it


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("HF_TOKEN", SECRET_CANARY),
        ("WANDB_API_KEY", "0123456789abcdef0123456789abcdef"),
        ("DB_PASSWORD", "hunter2hunter2"),
        ("UPLOAD_URL_NOT_SECRET", "sk-CANARYlooksLikeAnOpenAIkey0000"),  # caught by the value's shape
    ],
)
def test_a12_literal_secret_is_refused_and_never_echoed(
    tmp_path: Path, env: dict[str, str], rsim: RecordingSim, name: str, value: str
) -> None:
    text = RUNPOD_JOB.replace(
        "  command: python train.py\n", f"  command: python train.py\n  env: {{{name}: {value}}}\n"
    )
    project = tmp_path / "project"
    write_job(project, text)
    lines = refused(project, env, rsim, ["validate"], ["plan"])
    assert any(f": run.env.{name}: looks like a secret" in ln and "run.secrets" in ln for ln in lines), lines
    for args in (["validate"], ["validate", "--format", "json"], ["plan", "--format", "json"]):
        run = cli(args, cwd=project, env=env)
        assert value not in run.output and value[:12] not in run.output


def test_a12_plain_settings_are_not_mistaken_for_secrets(tmp_path: Path) -> None:
    env_yaml = "  env: {WANDB_PROJECT: bert, KEY_PATH: /workspace/k, NUM_PASSES: '3', HF_TOKEN: ''}\n"
    text = RUNPOD_JOB.replace("  command: python train.py\n", "  command: python train.py\n" + env_yaml)
    assert load_spec(write_job(tmp_path, text)).spec.run.env["KEY_PATH"] == "/workspace/k"  # type: ignore[union-attr]


# ---- A13 a secret named in run.secrets is not set


def test_a13_unset_secret_fails_the_plan_by_name_only(tmp_path: Path, env: dict[str, str]) -> None:
    project = tmp_path / "project"
    write_job(project, RUNPOD_JOB)
    env = {**env, "HF_TOKEN": "", "UNRELATED_SETTING": "do-not-dump-the-environment-7731"}
    run = cli(["plan"], cwd=project, env=env)
    assert run.exit_code == 1, run.output
    assert "HF_TOKEN" in run.output and "not set" in run.output
    assert "do-not-dump-the-environment-7731" not in run.output and "Traceback" not in run.output


# ---- A14 image without a digest


def test_a14_unpinned_image_is_flagged_pinned_is_not(tmp_path: Path, env: dict[str, str]) -> None:
    project = tmp_path / "project"
    write_job(project, RUNPOD_JOB.replace(IMAGE, "pytorch/pytorch:latest"))
    run = cli(["plan"], cwd=project, env=env)
    assert "[image-digest] image pytorch/pytorch:latest is not pinned by digest" in run.stdout, run.output
    pinned = "pytorch/pytorch@sha256:" + "ab" * 32
    write_job(project, RUNPOD_JOB.replace(IMAGE, pinned))
    run = cli(["plan"], cwd=project, env=env)
    assert run.exit_code in (0, 2) and "image-digest" not in run.stdout, run.output


# ---- A15 nonsense limits; a plan over budget is blocked


@pytest.mark.parametrize(
    ("old", "new", "key"),
    [
        ("  gpu: A100-80GB", "  gpu: A100-80GB\n  gpu_count: 0", "machine.gpu_count"),
        ("  interval: 15m", "  interval: -1h", "checkpoint.interval"),
        ("  interval: 15m", "  interval: 0s", "checkpoint.interval"),
        ("  command: python train.py", "  command: python train.py\n  max_runtime: 1e9", "run.max_runtime"),
        ("  volume_gb: 100", "  volume_gb: -5", "storage.volume_gb"),
        ("  volume_gb: 100", "  volume_gb: 100\nbudget: {max_total_usd: lots}", "budget.max_total_usd"),
        ("  volume_gb: 100", "  volume_gb: 100\nbudget: {max_hourly_usd: 0}", "budget.max_hourly_usd"),
    ],
)
def test_a15_nonsense_limits_are_schema_errors(tmp_path: Path, old: str, new: str, key: str) -> None:
    found = problems(write_job(tmp_path, RUNPOD_JOB.replace(old, new, 1)))
    assert len(found) == 1 and f": {key}: " in found[0], found


def test_a15_plan_over_the_hourly_budget_is_blocked(tmp_path: Path, env: dict[str, str]) -> None:
    project = tmp_path / "project"
    write_job(project, RUNPOD_JOB + "budget:\n  max_hourly_usd: 0.5\n")
    run = cli(["plan", "--detailed-exitcode"], cwd=project, env=env)
    assert run.exit_code == 1, run.output
    assert "budget" in run.stdout and "block apply" in run.stderr


# ---- A16 unknown or wrongly cased region / GPU


@pytest.mark.parametrize(
    ("old", "new", "key", "guess"),
    [
        ("[EU-RO-1]", "[eu-ro-1]", "machine.regions[0]", "EU-RO-1"),
        ("gpu: A100-80GB", "gpu: H100-80B", "machine.gpu", "H100-80GB"),
        ("gpu: A100-80GB", "gpu: A100-80G", "machine.gpu", "A100-80GB"),
    ],
)
def test_a16_unknown_region_or_gpu_names_the_choice_and_creates_nothing(
    tmp_path: Path, env: dict[str, str], rsim: RecordingSim, old: str, new: str, key: str, guess: str
) -> None:
    project = tmp_path / "project"
    write_job(project, RUNPOD_JOB.replace(old, new))
    lines = refused(project, env, rsim, ["validate"], ["plan"])
    assert any(f": {key}: unknown" in ln and f"did you mean '{guess}'" in ln for ln in lines), lines


# ---- A17 / F7 project directory secrets are never synced


def test_a17_state_dir_git_and_dotenv_never_sync(tmp_path: Path) -> None:
    from gpujob.ssh.ignore import walk

    for rel in (".env", ".env.local", ".gpujob/id_ed25519", ".git/config", "train.py", "sub/.env"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(SECRET_CANARY)
    sent = {e.rel for e in walk(tmp_path, [])}
    assert sent == {"train.py"}, sent
