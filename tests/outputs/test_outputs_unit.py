"""The outputs block: validation (RP2: nothing on a RunPod container disk), where each path is read
from and where its files land, and the gate's check of a listing against the local copies."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from pydantic import ValidationError

from gpujob.layout.outputs import RUN_FILES, _root, file_root, output_roots, pull_to, run_root
from gpujob.outputs.remote import Listed, unsafe
from gpujob.spec.load import check_files
from gpujob.ssh.listing import RemoteFile, RemoteListing
from tests.apply.fakes import make_spec

JOB = """version: 1
name: ev
platform: {platform}
machine:
  gpu: {gpu}
  regions: [{region}]
  {image}
storage:
  volume_gb: {volume}
outputs:
  paths: [/workspace/results, {second}]
"""


def _check(tmp_path: Path, second: str, platform: str = "runpod") -> list[str]:
    fields = (
        {"gpu": "RTX4090", "region": "EU-RO-1", "image": "image: runpod/pytorch:2.4.0", "volume": 20}
        if platform == "runpod"
        else {"gpu": "A4000", "region": "ny2", "image": "template: ML-in-a-Box", "volume": 50}
    )
    path = tmp_path / "job.yaml"
    path.write_text(JOB.format(platform=platform, second=second, **fields))
    return [f"{p.line}:{p.key_path}: {p.message}" for p in check_files([path])]


def test_an_output_on_a_runpod_container_disk_is_a_validate_error_naming_the_line(tmp_path: Path) -> None:
    (problem,) = _check(tmp_path, "/root/eval/*.json")
    assert problem.startswith("11:outputs.paths[1]:") and "container disk" in problem and "RP2" in problem
    assert _check(tmp_path, "/workspace/eval/*.json") == []
    assert _check(tmp_path, "/root/eval", platform="paperspace") == []  # one disk, kept while off


@pytest.mark.parametrize("bad", ["results", "/", "/workspace/../etc", "/workspace/./x"])
def test_output_paths_are_absolute_and_plain(bad: str) -> None:
    with pytest.raises(ValidationError):
        make_spec(outputs={"paths": [bad]})


def test_roots_globs_and_landing_places(tmp_path: Path) -> None:
    spec = make_spec(
        outputs={"paths": ["/workspace/results", "/workspace/eval/*.json", "/workspace/r*/m?.txt"]}
    )
    plain, glob, deep = output_roots(spec)
    assert (plain.base, plain.only) == ("/workspace/results", None)
    assert glob.base == "/workspace/eval" and glob.selects("a.json") and not glob.selects("a.txt")
    assert not glob.selects("sub/a.json")
    assert deep.base == "/workspace" and deep.selects("run1/m1.txt") and not deep.selects("ckpt/m1.txt")
    assert deep.selects("r/m2.txt/inner")  # a selected directory brings what is under it
    assert glob.local == "workspace/eval" and glob.remote("a.json") == "/workspace/eval/a.json"
    f = file_root("/workspace/metrics.json")
    assert f.base == "/workspace" and f.selects("metrics.json") and not f.selects("other.json")
    run = run_root(spec)
    assert run.base == "/workspace/.gpujob/toy" and run.local == ".gpujob/toy"
    assert run.selects("run.log") and not run.selects("launcher.sh") and not run.selects("pid")
    assert "run.log" in RUN_FILES
    assert pull_to(spec, tmp_path / "job.yaml") == tmp_path / "outputs"
    assert _root("/a/b[0-9]/c").base == "/a"


def test_unsafe_reads_each_local_copy_again(tmp_path: Path) -> None:
    root = _root("/workspace/results")
    data = {"a.json": b"one", "sub/b.json": b"two"}
    listing = RemoteListing(
        dir=root.base,
        exists=True,
        files={n: RemoteFile(size=len(d), sha256=hashlib.sha256(d).hexdigest()) for n, d in data.items()},
        unpullable={"bad\\name": "backslash in the name"},
    )
    local = tmp_path / "outputs"
    (local / "workspace/results/sub").mkdir(parents=True)
    (local / "workspace/results/a.json").write_bytes(b"one")
    (local / "workspace/results/sub/b.json").write_bytes(b"TWO")  # differs
    problems = unsafe([Listed(root, listing)], local)
    assert len(problems) == 2
    assert "'/workspace/results/sub/b.json' (no local copy" in problems[1] and "not pullable" in problems[0]


def test_the_plan_data_line_names_the_outputs_an_action_erases_with_the_bytes_last_pulled(
    tmp_path: Path,
) -> None:
    from datetime import UTC, datetime, timedelta
    from types import SimpleNamespace

    from gpujob.outputs.plan import outputs_line
    from gpujob.plan.outputs_record import OutputFile, OutputsRecord, save_outputs_record
    from gpujob.profile import load_profile
    from gpujob.state import open_store

    spec = make_spec(
        storage={"network_volume": None, "volume_gb": 10}, outputs={"paths": ["/workspace/results"]}
    )
    (tmp_path / "job.yaml").write_text("x")
    profile = load_profile("runpod")
    now = datetime(2026, 11, 29, 12, tzinfo=UTC)
    ctx = SimpleNamespace(spec=spec, profile=profile, loaded=SimpleNamespace(path=tmp_path / "job.yaml", spec=spec),
                          machine=SimpleNamespace(id="pod1"))  # fmt: skip
    terminate = lambda tier: profile.survives(tier, "terminate")  # noqa: E731
    line = outputs_line(ctx, terminate, now)
    assert line == "; outputs /workspace/results on the volume disk: LOST unless pulled (never pulled)", line
    files = {"/workspace/results/a.json": OutputFile(size=1500, sha256="a" * 64),
             "/workspace/other/b.json": OutputFile(size=7, sha256="b" * 64)}  # fmt: skip
    save_outputs_record(open_store(tmp_path / "job.yaml"), OutputsRecord(job="toy", resource_id="pod1", local_dir="/l",
                                                                          at=now - timedelta(minutes=12), files=files))  # fmt: skip
    line = outputs_line(ctx, terminate, now)
    assert line.endswith("LOST unless pulled (last pull: 1 file(s), 1.5 kB, 12 min ago)"), line
    assert "survive" in outputs_line(ctx, lambda tier: profile.survives(tier, "stop"), now)


def test_a_volume_delete_names_the_outputs_on_the_network_volume(tmp_path: Path) -> None:
    from datetime import UTC, datetime
    from types import SimpleNamespace

    from gpujob.plan.builder import _outputs_on_volume
    from gpujob.profile import load_profile

    spec = make_spec(outputs={"paths": ["/workspace/results"]})  # the fakes' default: a network volume
    (tmp_path / "job.yaml").write_text("x")
    ctx = SimpleNamespace(spec=spec, profile=load_profile("runpod"), loaded=SimpleNamespace(path=tmp_path / "job.yaml", spec=spec),
                          machine=None, now=datetime(2026, 11, 29, tzinfo=UTC))  # fmt: skip
    line = _outputs_on_volume(ctx)  # type: ignore[arg-type]
    assert "outputs /workspace/results on the network volume" in line and "LOST unless pulled" in line, line
