"""What validate must catch before apply could choke on it or leak through it (issue 13): remote paths
a shell cannot carry (NUL, newline, relative components), provider API keys listed as run secrets,
sync.src leaving the project, credential files in the sync, and what the deny list lets a job add.
Every refusal is a file:line:col problem from validate and plan, with zero API requests."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpujob.apply.runtime import collect_secrets
from gpujob.errors import GpujobError, SpecError
from gpujob.spec.load import load_spec
from gpujob.ssh.ignore import walk
from tests.reliability.reliability_kit import RUNPOD_JOB, RecordingSim, cli, write_job
from tests.reliability.test_catalogue_a_input import problems, refused

# ---- remote paths: what apply would have died on after creating the pod


@pytest.mark.parametrize(
    ("key", "line", "value", "says"),
    [
        # The case: passed validate and plan, then apply created the pod and died on a ValueError.
        (
            "checkpoint.dir",
            "  dir: /workspace/ckpt",
            '  dir: "/workspace/ck\\npt"',
            "control character (\\n)",
        ),
        ("checkpoint.dir", "  dir: /workspace/ckpt", '  dir: "/workspace/ck\\0pt"', "NUL"),
        (
            "checkpoint.dir",
            "  dir: /workspace/ckpt",
            '  dir: "/workspace/ck\\rpt"',
            "control character (\\r)",
        ),
        ("checkpoint.dir", "  dir: /workspace/ckpt", "  dir: /workspace/./ckpt", "'.' components"),
        ("storage.mount", "  volume_gb: 100", "  volume_gb: 100\n  mount: /workspace/./x", "'.' components"),
        (
            "storage.mount",
            "  volume_gb: 100",
            '  volume_gb: 100\n  mount: "/work\\tspace"',
            "control character",
        ),
        (
            "run.sync.dest",
            "  command: python train.py",
            '  command: python train.py\n  sync: {dest: "/workspace/co\\nde"}',
            "control character (\\n)",
        ),
        (
            "run.sync.dest",
            "  command: python train.py",
            "  command: python train.py\n  sync: {dest: /workspace/code/../../etc}",
            "'..'",
        ),
    ],
)
def test_remote_paths_a_shell_cannot_carry_are_refused_with_a_position(
    tmp_path: Path, env: dict[str, str], rsim: RecordingSim, key: str, line: str, value: str, says: str
) -> None:
    text = RUNPOD_JOB.replace(line, value, 1)
    assert text != RUNPOD_JOB
    project = tmp_path / "project"
    write_job(project, text)
    lines = refused(project, env, rsim, ["validate"], ["plan"])
    assert len(lines) == 1 and f": {key}: " in lines[0] and says in lines[0], lines
    # file:line:col points at the line the bad value is written on
    lineno = int(lines[0].split(":")[1])
    assert text.splitlines()[lineno - 1] == value.splitlines()[-1]
    assert "\n" not in lines[0].rstrip("\n")  # the problem is one printable line


# ---- provider API keys as run secrets


@pytest.mark.parametrize("name", ["RUNPOD_API_KEY", "PAPERSPACE_API_KEY"])
def test_a_provider_api_key_as_a_run_secret_is_refused_with_the_reason_and_the_alternative(
    tmp_path: Path, env: dict[str, str], rsim: RecordingSim, name: str
) -> None:
    project = tmp_path / "project"
    write_job(project, RUNPOD_JOB.replace("secrets: [HF_TOKEN]", f"secrets: [HF_TOKEN, {name}]"))
    [line] = refused(project, env, rsim, ["validate"], ["plan"])
    assert "job.yaml:15:23: " in line and f"run.secrets[1]: {name} is gpujob's" in line
    assert "account key" in line and "create, stop and delete everything" in line
    assert "separate key with the least access" in line
    # The value is never shown, even though it is set in this environment.
    assert env[name] not in cli(["validate"], cwd=project, env=env).output


def test_a_secret_holding_the_api_key_value_under_another_name_is_not_sent(tmp_path: Path) -> None:
    spec = load_spec(write_job(tmp_path, RUNPOD_JOB.replace("[HF_TOKEN]", "[HF_TOKEN, MY_KEY]"))).spec
    env = {"HF_TOKEN": "hf_x", "MY_KEY": "rpa_same_value_123", "RUNPOD_API_KEY": "rpa_same_value_123"}
    with pytest.raises(GpujobError, match="MY_KEY holds the same value as RUNPOD_API_KEY") as info:
        collect_secrets(spec, env)
    assert "rpa_same_value_123" not in info.value.render()
    env["MY_KEY"] = "something-else"
    assert collect_secrets(spec, env) == {"HF_TOKEN": "hf_x", "MY_KEY": "something-else"}


# ---- sync.src stays inside the project


def _with_src(src: str) -> str:
    return RUNPOD_JOB.replace(
        "  command: python train.py", f"  command: python train.py\n  sync: {{src: '{src}'}}"
    )


@pytest.mark.parametrize(
    ("src", "says"),
    [
        ("../../../root", "outside the project"),
        ("code/../../elsewhere", "outside the project"),
        ("/etc", "relative path inside the project"),
        ("~/secrets", "relative path inside the project"),
    ],
)
def test_sync_src_that_leaves_the_project_is_refused(
    tmp_path: Path, env: dict[str, str], rsim: RecordingSim, src: str, says: str
) -> None:
    project = tmp_path / "project"
    write_job(project, _with_src(src))
    [line] = refused(project, env, rsim, ["validate"], ["plan"])
    assert ": run.sync.src: " in line and says in line, line


def test_sync_src_through_a_symlink_out_of_the_project_is_refused(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    project = tmp_path / "project"
    project.mkdir()
    (project / "code").symlink_to(outside)
    [line] = problems(write_job(project, _with_src("code")))
    assert ": run.sync.src: 'code' leads to" in line and str(outside) in line


def test_sync_src_inside_the_project_loads_including_the_repo_root_from_jobs(tmp_path: Path) -> None:
    (tmp_path / "code").mkdir()
    assert load_spec(write_job(tmp_path, _with_src("code"))).spec.run.sync.src == "code"  # type: ignore[union-attr]
    # jobs/bert.yaml: the project is the folder above jobs/, so `..` is the repository root.
    jobs = tmp_path / "repo" / "jobs"
    assert load_spec(write_job(jobs, _with_src(".."), "bert.yaml")).spec.run.sync.src == ".."  # type: ignore[union-attr]
    with pytest.raises(SpecError, match="outside the project"):
        load_spec(write_job(jobs, _with_src("../.."), "bert.yaml"))


# ---- credential files never sync; the job file extends the list


CREDENTIALS = [
    ".docker/config.json",
    ".kube/config",
    ".config/gcloud/application_default_credentials.json",
    ".config/gcloud/credentials.db",
    ".git-credentials",
    ".npmrc",
    ".pypirc",
    ".envrc",
    "credentials.json",
    "deploy/credentials.json",
    ".huggingface/token",
    "sub/.cache/huggingface/token",
    ".kaggle/kaggle.json",
    ".aws/credentials",
    ".azure/accessTokens.json",
    ".netrc",
    ".env",
    ".env.production",
    ".ssh/id_ed25519",
    "tls/server.key",
    "deploy/id_rsa",
    ".vault-token",
    ".cargo/credentials.toml",
]


def _tree(root: Path, rels: list[str]) -> None:
    for rel in rels:
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("x")


def test_credential_files_of_the_ecosystem_never_sync(tmp_path: Path) -> None:
    _tree(tmp_path, [*CREDENTIALS, "train.py", "pkg/model.py", "configs/train.json", "docker/Dockerfile"])
    sent = sorted(e.rel for e in walk(tmp_path, []))
    assert sent == ["configs/train.json", "docker/Dockerfile", "pkg/model.py", "train.py"]


def test_no_exclude_or_gitignore_negation_re_includes_a_credential(tmp_path: Path) -> None:
    _tree(tmp_path, ["train.py", ".npmrc", "credentials.json"])
    (tmp_path / ".gitignore").write_text("!.npmrc\n!credentials.json\n")
    assert sorted(e.rel for e in walk(tmp_path, ["!.npmrc", "!credentials.json"])) == [
        ".gitignore",
        "train.py",
    ]


def test_the_job_file_extends_the_deny_list(tmp_path: Path, env: dict[str, str], rsim: RecordingSim) -> None:
    from gpujob.apply.runtime import sync_patterns

    text = RUNPOD_JOB.replace(
        "  command: python train.py",
        "  command: python train.py\n  sync: {exclude: ['!secrets.yaml'], deny: [secrets.yaml, 'vault/']}",
    )
    spec = load_spec(write_job(tmp_path / "ok", text)).spec
    _tree(tmp_path / "src", ["train.py", "secrets.yaml", "vault/token", "conf/secrets.yaml"])
    sent = sorted(e.rel for e in walk(tmp_path / "src", sync_patterns(spec)))
    assert sent == ["train.py"]
    # A deny entry cannot be a negation: that would re-include instead of deny.
    project = tmp_path / "project"
    write_job(project, text.replace("deny: [secrets.yaml", "deny: ['!.env'"))
    [line] = refused(project, env, rsim, ["validate"])
    assert ": run.sync.deny: " in line and "'!.env' is not a deny pattern" in line


def test_the_deny_list_is_documented() -> None:
    from gpujob.ssh.ignore import DENY

    page = (Path(__file__).resolve().parents[2] / "docs" / "security.md").read_text()
    section = page.split("## Secrets", 1)[1].split("\n## ", 1)[0]
    missing = [p for p in DENY if f"`{p}`" not in section]
    assert not missing, f"docs/security.md 'Secrets' does not list {missing}"
    assert "run.sync.deny" in section
