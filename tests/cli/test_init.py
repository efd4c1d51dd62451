"""`gpujob init` without the simulator: names, refusing to overwrite, and the starter train.py's
resume recipe run for real (plain Python here; PyTorch when it is importable)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from gpujob.cli.cmd_init import job_name


def gj(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "gpujob", *args], cwd=cwd, capture_output=True, text=True)


@pytest.mark.parametrize(
    ("raw", "name"),
    [("My Project", "my-project"), ("2024_runs", "job-2024-runs"), ("---", "my-job"), ("bert", "bert")],
)
def test_job_name_from_a_directory(raw: str, name: str) -> None:
    assert job_name(raw) == name


def test_init_writes_valid_files_and_never_overwrites(tmp_path: Path) -> None:
    d = tmp_path / "Fine Tune"
    d.mkdir()
    assert gj(d, "init").returncode == 0
    assert "name: fine-tune" in (d / "job.yaml").read_text()
    assert gj(d, "validate").returncode == 0
    (d / "train.py").write_text("# mine\n")
    again = gj(d, "init", "--platform", "paperspace")
    assert again.returncode == 1 and "nothing was written" in again.stderr and "--force" in again.stderr
    assert (d / "train.py").read_text() == "# mine\n" and "platform: runpod" in (d / "job.yaml").read_text()
    forced = gj(d, "init", "--platform", "paperspace", "--force")
    assert forced.returncode == 0 and "platform: paperspace" in (d / "job.yaml").read_text()
    assert gj(d, "validate").returncode == 0
    bad = gj(d, "init", "--name", "Bad_Name", "--dir", "other")
    assert bad.returncode == 1 and "`gpujob init --platform runpod --name bad-name --dir other`" in bad.stderr
    assert not (d / "other").exists()


def test_init_hints_run_as_printed(tmp_path: Path) -> None:
    """Each hint repeats the command as given (platform, dir), fixed; run in a fresh shell it works."""
    from tests.e2e.hint_support import printed_hints, run_hint

    env = dict(os.environ)
    bad = gj(tmp_path, "init", "--platform", "paperspace", "--name", "Bad_Name", "--dir", "sub")
    (fixed,) = printed_hints(bad)
    run_hint(fixed, tmp_path, env)
    assert "name: bad-name" in (tmp_path / "sub" / "job.yaml").read_text()
    (tmp_path / "sub" / "train.py").write_text("# mine\n")
    exists = gj(tmp_path, "init", "--platform", "paperspace", "--name", "bad-name", "--dir", "sub")
    (forced,) = printed_hints(exists)
    assert forced == "gpujob init --platform paperspace --name bad-name --dir sub --force"
    run_hint(forced, tmp_path, env)
    assert (tmp_path / "sub" / "train.py").read_text() != "# mine\n"
    assert "platform: paperspace" in (tmp_path / "sub" / "job.yaml").read_text()


def test_the_starter_loop_resumes_from_its_newest_complete_checkpoint(tmp_path: Path) -> None:
    assert gj(tmp_path, "init").returncode == 0
    env = {
        **os.environ,
        "GPUJOB_CHECKPOINT_DIR": str(tmp_path / "ck"),
        "GPUJOB_CHECKPOINT_INTERVAL": "0",
        "GPUJOB_CHECKPOINT_KEEP": "2",
        "TRAIN_STEPS": "40",
        "GPUJOB_PROGRESS_FILE": str(tmp_path / "progress"),
    }
    env.pop("STEP_SECONDS", None)

    def train() -> str:
        res = subprocess.run(
            [sys.executable, "train.py"], cwd=tmp_path, env=env, capture_output=True, text=True
        )
        assert res.returncode == 0, res.stdout + res.stderr
        return res.stdout

    assert "starting fresh at step 0" in train()
    ckpts = sorted((tmp_path / "ck").iterdir())
    assert [c.name.split(".")[0] for c in ckpts] == ["step_00000039", "step_00000040"]  # keep 2
    assert (tmp_path / "progress").read_text() == "40\n"
    # A torn newest file (a crash mid-write that skipped the atomic rename) is skipped, not fatal.
    ckpts[-1].write_bytes(ckpts[-1].read_bytes()[:10])
    (tmp_path / "ck" / "step_00000041.json.tmp").write_text("half")
    env["TRAIN_STEPS"] = "45"
    out = train()
    assert "skipping step_00000040" in out and "resumed from step 39" in out and "done at step 45" in out
    verify = subprocess.run(
        [sys.executable, "verify_ckpt.py", str(sorted((tmp_path / "ck").glob("step_*0045.*"))[0])],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert verify.returncode == 0, verify.stderr
    bad = subprocess.run(
        [sys.executable, "verify_ckpt.py", str(ckpts[-1])], cwd=tmp_path, capture_output=True, text=True
    )
    assert bad.returncode == 1 and "cannot load" in bad.stderr


@pytest.mark.parametrize("platform", ["runpod", "paperspace"])
def test_the_starter_carries_a_smoke_that_passes_without_a_gpu(tmp_path: Path, platform: str) -> None:
    from gpujob.smoke import run_smoke
    from gpujob.spec.load import load_specs

    assert gj(tmp_path, "init", "--platform", platform).returncode == 0
    loaded = load_specs([tmp_path / "job.yaml"])[0]
    assert loaded.spec.run is not None and loaded.spec.run.smoke
    result = run_smoke(loaded.spec, loaded.path, dict(os.environ))
    assert result.ok, result.output
    assert "done at step 20" in result.output
    assert (
        not (tmp_path / "ckpt").exists() and not (tmp_path / "checkpoints").exists()
    )  # a temporary dir only


def test_init_appends_the_ignores_a_team_needs_and_never_rewrites_the_file(tmp_path: Path) -> None:
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    mine = "node_modules/\n/checkpoints"  # no trailing newline, one of ours already there (anchored)
    (tmp_path / ".gitignore").write_text(mine)
    assert gj(tmp_path, "init").returncode == 0
    text = (tmp_path / ".gitignore").read_text()
    assert text.startswith(mine + "\n")  # what was there stays, byte for byte
    lines = text.splitlines()
    assert ".gpujob/" in lines and "outputs/" in lines and "checkpoints/" not in lines
    assert gj(tmp_path, "init", "--force").returncode == 0
    assert (tmp_path / ".gitignore").read_text() == text  # nothing added twice
    ignored = subprocess.run(
        ["git", "check-ignore", ".gpujob/key", "checkpoints/a", "outputs/b"],
        cwd=tmp_path,
        capture_output=True,
    )
    assert ignored.returncode == 0 and len(ignored.stdout.splitlines()) == 3  # git agrees


def test_init_writes_a_gitignore_where_there_was_none_and_leaves_a_symlinked_one(tmp_path: Path) -> None:
    fresh = tmp_path / "fresh"
    assert gj(tmp_path, "init", "--dir", "fresh").returncode == 0
    assert (fresh / ".gitignore").read_text().splitlines()[1:] == [".gpujob/", "checkpoints/", "outputs/"]
    linked = tmp_path / "linked"
    linked.mkdir()
    (tmp_path / "elsewhere").write_text("x\n")
    (linked / ".gitignore").symlink_to(tmp_path / "elsewhere")
    res = gj(linked, "init")
    assert res.returncode == 0 and "left" in res.stdout and "symlink" in res.stdout
    assert (tmp_path / "elsewhere").read_text() == "x\n"


def test_the_schema_line_is_never_an_absolute_path(tmp_path: Path) -> None:
    from gpujob import __version__

    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)  # a repository without gpujob's schema
    assert gj(tmp_path, "init").returncode == 0
    first = (tmp_path / "job.yaml").read_text().splitlines()[0]
    assert first == (
        "# yaml-language-server: $schema="
        f"https://raw.githubusercontent.com/gpujob/gpujob/v{__version__}/schemas/job.schema.json"
    )
    root = Path(__file__).resolve().parents[2]
    if not (root / ".git").exists():
        pytest.skip("not run from a git checkout: the in-repository case needs one")
    inside = root / "build" / f"init-{os.getpid()}"
    try:
        assert gj(root, "init", "--dir", str(inside)).returncode == 0
        ref = (inside / "job.yaml").read_text().splitlines()[0].split("$schema=", 1)[1]
        assert ref == "../../schemas/job.schema.json"
        assert (inside / ref).resolve() == root / "schemas" / "job.schema.json"
    finally:
        import shutil

        shutil.rmtree(inside, ignore_errors=True)
        if (root / "build").exists() and not any((root / "build").iterdir()):
            (root / "build").rmdir()


@pytest.mark.parametrize("platform", ["runpod", "paperspace"])
def test_the_starter_checkpoints_every_few_seconds(tmp_path: Path, platform: str) -> None:
    from gpujob.spec.load import load_spec

    assert gj(tmp_path, "init", "--platform", platform).returncode == 0
    ck = load_spec(tmp_path / "job.yaml").spec.checkpoint
    assert ck is not None and ck.interval != "auto"
    assert ck.interval.total_seconds() <= 10


@pytest.mark.parametrize("force", [False, True])
@pytest.mark.parametrize("dangling", [True, False])
def test_init_never_writes_through_a_symlink(tmp_path: Path, force: bool, dangling: bool) -> None:
    d, outside = tmp_path / "proj", tmp_path / "outside"
    d.mkdir()
    outside.mkdir()
    target = outside / "victim.py"
    if not dangling:
        target.write_text("keep me\n")
    (d / "train.py").symlink_to(target)
    out = gj(d, "init", *(["--force"] if force else []))
    assert out.returncode == 1 and "train.py is a symbolic link" in out.stderr, out.stderr
    assert "nothing was written" in out.stderr
    assert (target.read_text() == "keep me\n") if not dangling else not target.exists()
    assert not (d / "job.yaml").exists() and (d / "train.py").is_symlink()
