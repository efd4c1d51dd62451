from __future__ import annotations

import hashlib
from datetime import timedelta
from pathlib import Path

import pytest

from gpujob.errors import SpecError
from gpujob.spec.load import LoadedSpec, SpecProblem, discover_job_files, load_spec, load_specs
from gpujob.spec.yamlsafe import MAX_BYTES


def problems_of(path: Path) -> list[SpecProblem]:
    with pytest.raises(SpecError) as info:
        load_spec(path)
    return info.value.problems


def only(path: Path) -> SpecProblem:
    found = problems_of(path)
    assert len(found) == 1, [str(p) for p in found]
    return found[0]


def test_problem_renders_file_line_col_key_message_hint() -> None:
    p = SpecProblem("a/job.yaml", 3, 5, "machine.spot", "spot is not available", "remove it")
    assert str(p) == "a/job.yaml:3:5: machine.spot: spot is not available (hint: remove it)"
    assert str(SpecProblem("f", 1, 1, "", "file is empty")) == "f:1:1: file is empty"
    assert p.to_dict()["key_path"] == "machine.spot"


def test_valid_job_loads_with_digest_and_sources(write, runpod_job) -> None:
    path = write(runpod_job)
    loaded = load_spec(path)
    assert isinstance(loaded, LoadedSpec)
    assert loaded.spec.name == "bert" and loaded.spec.machine.gpu == ["A100-80GB", "H100-80GB"]
    assert loaded.spec.checkpoint is not None and loaded.spec.checkpoint.interval == timedelta(minutes=15)
    assert loaded.digest == hashlib.sha256(path.read_bytes()).hexdigest()
    assert loaded.path == path
    ref = loaded.source("machine.regions")
    assert ref is not None and (ref.line, ref.column, ref.key, ref.file) == (
        6,
        3,
        "machine.regions",
        str(path),
    )
    item = loaded.source("machine.gpu[1]")
    assert item is not None and (item.line, item.column) == (5, 20)
    # An absent key resolves to its closest written parent; a path with nothing written gives None.
    absent = loaded.source("machine.spot")
    assert absent is not None and (absent.line, absent.column, absent.key) == (4, 1, "machine.spot")
    assert loaded.source("budget.max_hourly_usd") is None


def test_examples_load_clean(repo) -> None:
    paths = [
        repo / "examples" / d / "job.yaml"
        for d in ("runpod-spot-netvol", "runpod-ondemand", "paperspace-core")
    ]
    loaded = load_specs(paths)
    assert [x.spec.platform for x in loaded] == ["runpod", "runpod", "paperspace"]
    spot = loaded[0].spec
    assert spot.machine.spot and spot.storage.network_volume is not None
    assert spot.checkpoint is not None and spot.checkpoint.dir.startswith(spot.storage.mount)
    for path in paths:
        assert path.read_text().startswith("# yaml-language-server: $schema=../../schemas/job.schema.json\n")


def test_load_specs_collects_every_problem_across_files(write, runpod_job, paperspace_job) -> None:
    a = write(runpod_job.replace("gpu: [A100-80GB, H100-80GB]", "gpu: [A100-80G]"), "a.job.yaml")
    b = write(paperspace_job.replace("auto_shutdown: 72h", "auto_shutdown: 72 hours"), "b.job.yaml")
    ok = write(paperspace_job.replace("resnet", "fine"), "c.job.yaml")
    with pytest.raises(SpecError) as info:
        load_specs([a, ok, b])
    files = [p.file for p in info.value.problems]
    assert files == [str(a), str(b)]
    assert "machine.gpu[0]" in str(info.value) and "machine.auto_shutdown" in str(info.value)
    assert info.value.render().count("\n") == 1


def test_duplicate_job_names_across_files(write, runpod_job) -> None:
    a = write(runpod_job, "a.job.yaml")
    b = write(runpod_job, "b.job.yaml")
    with pytest.raises(SpecError) as info:
        load_specs([a, b])
    (problem,) = info.value.problems
    assert (problem.file, problem.line, problem.key_path) == (str(b), 2, "name")
    assert str(a) in problem.message


def test_discover_prefers_job_yaml(tmp_path: Path) -> None:
    (tmp_path / "jobs").mkdir()
    for name in ("b.job.yaml", "a.job.yaml", "jobs/x.yaml", "jobs/notes.txt", "other.yaml"):
        (tmp_path / name).write_text("x: 1\n")
    assert discover_job_files(tmp_path) == [
        tmp_path / "a.job.yaml",
        tmp_path / "b.job.yaml",
        tmp_path / "jobs/x.yaml",
    ]
    (tmp_path / "job.yaml").write_text("x: 1\n")
    assert discover_job_files(tmp_path) == [tmp_path / "job.yaml"]
    assert discover_job_files(tmp_path / "nowhere") == []


@pytest.mark.parametrize(
    ("text", "where", "key", "needle"),
    [
        ("version: 1\nname: [unclosed\n", (3, 1), "", "malformed YAML"),
        ("a: 1\n\tb: 2\n", (2, 1), "", "malformed YAML"),
        ("version: 1\nversion: 1\n", (2, 1), "version", "duplicate key 'version' (first defined at line 1)"),
        ("- 1\n- 2\n", (1, 1), "", "got a list"),
        ("just text\n", (1, 1), "", "got a text value"),
        ("", (1, 1), "", "file is empty"),
        ("   \n\n", (1, 1), "", "file is empty"),
        ("# only\n# comments\n", (1, 1), "", "file is empty"),
        ("a: 1\n---\nb: 2\n", (2, 1), "", "one YAML document"),
        ("a: *nope\n", (1, 4), "", "refers to no anchor"),
        ("a: !!binary aGVsbG8=\n", (1, 4), "", "tag '!!binary' is not allowed"),
        ("a: !!python/name:os.system\n", (1, 4), "", "'!!python/name:os.system' is not allowed"),
        ("a: !secret x\n", (1, 4), "", "tag '!secret' is not allowed"),
        ("a: !!set {x}\n", (1, 4), "", "is not allowed"),
    ],
)
def test_fatal_problems_have_positions(write, text, where, key, needle) -> None:
    problems = problems_of(write(text))
    matching = [p for p in problems if needle in p.message]
    assert matching, [str(p) for p in problems]
    assert (matching[0].line, matching[0].col) == where, str(matching[0])
    assert matching[0].key_path == key


def test_safe_explicit_tags_are_allowed(write, runpod_job) -> None:
    loaded = load_spec(write(runpod_job.replace("name: bert", "name: !!str bert")))
    assert loaded.spec.name == "bert"


def test_python_tag_constructs_nothing(write, tmp_path: Path, runpod_job) -> None:
    marker = tmp_path / "pwned"
    text = runpod_job + f'x: !!python/object/apply:os.system ["touch {marker}"]\n'
    assert "is not allowed" in only(write(text)).message
    assert not marker.exists()


def test_size_cap_refuses_before_parsing(write) -> None:
    path = write("a: " + "x" * MAX_BYTES + "\n")
    problem = only(path)
    assert (problem.line, problem.col) == (1, 1) and "too large" in problem.message


def test_non_utf8_points_at_the_bad_byte(write) -> None:
    problem = only(write(b"version: 1\nname: caf\xe9\n"))
    assert (problem.line, problem.col) == (2, 10) and "UTF-8" in problem.message


def test_utf8_bom_is_fine(write, runpod_job) -> None:
    assert load_spec(write(b"\xef\xbb\xbf" + runpod_job.encode())).spec.name == "bert"


def test_missing_file_and_directory(tmp_path: Path) -> None:
    assert "no such file" in only(tmp_path / "absent.yaml").message
    assert "directory" in only(tmp_path).message


def test_billion_laughs_is_refused_quickly(write) -> None:
    lines = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for prev, name in zip("abcdefgh", "bcdefghi", strict=True):
        lines.append(f"{name}: &{name} [" + ",".join([f"*{prev}"] * 9) + "]")
    problem = only(write("\n".join(lines) + "\n"))
    assert "aliases are expanded" in problem.message and problem.line == 5


def test_alias_count_limit(write) -> None:
    text = "base: &b 1\nitems: [" + ", ".join(["*b"] * 150) + "]\n"
    assert "too many aliases" in only(write(text)).message


def test_a_few_aliases_and_merge_keys_are_fine(write, runpod_job) -> None:
    text = runpod_job.replace("regions: [EU-RO-1]", "regions: &r [EU-RO-1]")
    text = text.replace("  command: python train.py\n", "  command: python train.py\n  sync: {exclude: *r}\n")
    text += "budget: {<<: {max_hourly_usd: 3}, max_total_usd: 10}\n"
    spec = load_spec(write(text)).spec
    assert spec.run is not None and spec.run.sync.exclude == ["EU-RO-1"]
    assert (spec.budget.max_hourly_usd, spec.budget.max_total_usd) == (3, 10)


def test_deep_nesting_is_refused(write) -> None:
    assert "nested too deeply" in only(write("a: " + "[" * 200 + "]" * 200 + "\n")).message
    assert "nested too deeply" in only(write("a: " + "{x: " * 100 + "1" + "}" * 100 + "\n")).message


@pytest.mark.parametrize(
    ("text", "key", "needle"),
    [
        ("1: 2\n", "1", "unknown key '1'"),
        ("null: x\n", "null", "unknown key 'null'"),
        ("? [a, b]\n: 1\n", "('a', 'b')", "unknown key"),
    ],
)
def test_odd_keys_become_unknown_keys(write, text, key, needle) -> None:
    found = {p.key_path: p.message for p in problems_of(write(text))}
    assert needle in found[key]


def test_absurd_durations_are_problems_not_crashes(write, runpod_job) -> None:
    text = runpod_job.replace("interval: 15m", "interval: 99999999999999999999w")
    problem = only(write(text))
    assert problem.key_path == "checkpoint.interval" and "too long" in problem.message


def test_reused_anchor_is_silent(write, capsys) -> None:
    problems_of(write("a: &x 1\nb: &x 2\nc: *x\n"))
    captured = capsys.readouterr()
    assert "Warning" not in captured.err + captured.out


def test_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    import os

    fifo = tmp_path / "job.yaml"
    os.mkfifo(fifo)
    assert only(fifo).message == "is not a regular file"
