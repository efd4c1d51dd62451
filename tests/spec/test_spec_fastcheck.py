"""`gpujob validate`'s fast path (gpujob.spec.fastcheck) is sound: when it says a set of files is valid,
the full loader finds no problem in them, and the command prints byte for byte the same either way.

GPUJOB_VALIDATE_FULL=1 forces the full path; every comparison here runs the command both ways."""

from __future__ import annotations

import copy
import io
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpujob.cli.main import cli
from gpujob.spec import fastcheck, fastgen
from gpujob.spec.fastcheck import ENV_FULL, certainly_valid
from gpujob.spec.load import check_files
from tests.examples import examples

from .conftest import PAPERSPACE_JOB, REPO, RUNPOD_JOB

# Every YAML file of the repository that is, or looks like, a job file: the examples (valid and broken,
# and the CI workflows, which are YAML but no job files), the golden plans' jobs, the audit jobs and the
# starter files `gpujob init` writes.
REPO_YAML = sorted(
    str(p.relative_to(REPO))
    for pattern in (
        "examples/**/*.yaml",
        "examples/**/*.yml",
        "examples/**/.*.yml",
        "tests/golden/*/*.yaml",
        "tests/audit/jobs/*.yaml",
        "gpujob/starter/*.yaml",
    )
    for p in REPO.glob(pattern)
)
VALID_EXAMPLES = [
    "examples/quickstart/job.yaml",
    "examples/runpod-ondemand/job.yaml",
    "examples/runpod-spot-netvol/job.yaml",
    "examples/paperspace-core/job.yaml",
]


def _run(args: list[str], *, full: bool) -> tuple[int, str, str]:
    env = {ENV_FULL: "1" if full else ""}
    result = CliRunner().invoke(cli, ["validate", *args], env=env)
    assert "Traceback" not in result.output
    if result.exception is not None:
        assert isinstance(result.exception, SystemExit), result.exception
    return result.exit_code, result.stdout, result.stderr


def _same_both_ways(args: list[str]) -> tuple[int, str]:
    fast = _run(args, full=False)
    full = _run(args, full=True)
    assert fast == full, args
    return fast[0], fast[1]


def test_the_repository_yaml_is_all_there() -> None:
    assert set(VALID_EXAMPLES) <= set(REPO_YAML)
    assert len([f for f in REPO_YAML if f.startswith("examples/broken/")]) >= 20
    assert any(f.startswith("tests/golden/") for f in REPO_YAML)


@pytest.mark.parametrize("name", REPO_YAML)
@pytest.mark.parametrize("fmt", ["text", "json"])
def test_every_repository_file_prints_the_same_both_ways(
    name: str, fmt: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(REPO)
    code, out = _same_both_ways(["--format", fmt, name])
    if name.startswith("examples/broken/") and fmt == "text":
        assert code == 1 and out == (REPO / name).with_suffix(".expected").read_text(encoding="utf-8")
    if name in VALID_EXAMPLES:
        assert code == 0


@pytest.mark.parametrize("name", [f for f in REPO_YAML if f.startswith("examples/broken/")])
def test_a_broken_example_is_never_certainly_valid(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO)
    assert certainly_valid([Path(name)]) is False


@pytest.mark.parametrize("name", VALID_EXAMPLES)
def test_the_valid_examples_take_the_fast_path(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # If this fails after a change of gpujob/jobfile/model.py, run `make schemas` (python -m
    # gpujob.spec.fastgen); if it still fails, teach gpujob/spec/fastcheck.py the changed validator.
    monkeypatch.chdir(REPO)
    assert certainly_valid([Path(name)]) is True
    assert check_files([Path(name)]) == []


def test_many_files_at_once_and_the_name_clash(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO)
    assert _same_both_ways(VALID_EXAMPLES) == (0, "ok: 4 file(s) valid\n")
    assert certainly_valid([Path(n) for n in VALID_EXAMPLES])
    twice = [VALID_EXAMPLES[0], VALID_EXAMPLES[1], VALID_EXAMPLES[0]]
    code, out = _same_both_ways(twice)
    assert code == 1 and "is also used by" in out
    assert not certainly_valid([Path(n) for n in twice])
    code, out = _same_both_ways([*VALID_EXAMPLES, "examples/broken/unknown-gpu.yaml"])
    assert code == 1 and "unknown GPU" in out
    assert _same_both_ways(["examples"])[0] == 1  # a directory: whatever job files it holds


def test_the_conftest_jobs_take_the_fast_path(write) -> None:
    a, b = write(RUNPOD_JOB, "a.job.yaml"), write(PAPERSPACE_JOB, "b.job.yaml")
    assert certainly_valid([a, b]) and check_files([a, b]) == []


def test_the_switch_forces_the_full_path(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO)
    monkeypatch.setenv(ENV_FULL, "1")
    assert certainly_valid([Path(VALID_EXAMPLES[0])]) is False


def test_secrets_are_registered_as_the_full_path_does(write, monkeypatch: pytest.MonkeyPatch) -> None:
    from gpujob import redact

    job = RUNPOD_JOB.replace(
        "  command: python train.py\n", "  command: x\n  secrets: [HF_TOKEN, WANDB_API_KEY]\n"
    )
    other = RUNPOD_JOB.replace("name: bert", "name: other").replace(
        "  command: python train.py\n", "  command: x\n  secrets: [MY_SECRET]\n"
    )
    paths = [write(job, "a.job.yaml"), write(other, "b.job.yaml")]
    monkeypatch.setenv("HF_TOKEN", "hf_the-value-of-the-token")
    monkeypatch.setenv("WANDB_API_KEY", "short")  # too short to be redacted either way
    monkeypatch.setenv("MY_SECRET", "  padded secret value  ")
    registered = []
    for full in (False, True):
        monkeypatch.setattr(redact, "_VALUES", set())
        if full:
            assert check_files(paths) == []
        else:
            assert certainly_valid(paths)
        registered.append(set(redact._VALUES))
    assert registered[0] == registered[1] == {"hf_the-value-of-the-token", "padded secret value"}


def test_no_pydantic_when_every_file_is_valid(tmp_path: Path) -> None:
    # The speed of `gpujob validate` rests on this; bench/startup.py measures it.
    code = (
        "import sys\n"
        "from gpujob.cli.main import main\n"
        "sys.argv = ['gpujob', 'validate', *sys.argv[1:]]\n"
        "try:\n"
        "    main()\n"
        "except SystemExit as exc:\n"
        "    print('exit', exc.code)\n"
        # a module without a spec was never imported (cli/main.py's stand-in for pydantic's plugin loader)
        "print(sorted({n.split('.')[0] for n, m in sys.modules.items()\n"
        "              if n.split('.')[0] in ('pydantic', 'pydantic_core') and getattr(m, '__spec__', None)}))\n"
    )
    env = {**os.environ, "GPUJOB_PROFILE_CACHE": str(tmp_path / "cache")}
    env.pop(ENV_FULL, None)
    args = [sys.executable, "-c", code, *VALID_EXAMPLES]

    def run(**extra: str) -> list[str]:
        proc = subprocess.run(
            args, cwd=REPO, env={**env, **extra}, capture_output=True, text=True, check=True
        )
        return proc.stdout.splitlines()

    first = run()  # a fresh cache: the profile facts are made once, from the validated profiles
    assert first[0] == "ok: 4 file(s) valid"
    assert run() == ["ok: 4 file(s) valid", "exit 0", "[]"]
    assert run(**{ENV_FULL: "1"})[-1] == "['pydantic', 'pydantic_core']"  # the switch does switch
    bad = subprocess.run(
        [sys.executable, "-c", code, "examples/broken/unknown-gpu.yaml"],
        cwd=REPO, env=env, capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert "unknown GPU" in bad.stdout and bad.stdout.splitlines()[-1] == "['pydantic', 'pydantic_core']"


def test_the_rules_table_is_current() -> None:
    assert not fastgen.stale(), "run `make schemas` (python -m gpujob.spec.fastgen) and commit fastrules.json"
    assert fastcheck.load_rules() is not None


def test_a_stale_table_switches_the_fast_path_off(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    table = json.loads(fastcheck.TABLE.read_text())
    edited = copy.deepcopy(table)
    edited["sources"]["gpujob/jobfile/model.py"] = "0" * 64  # as if model.py changed after the table
    stale = tmp_path / "stale.json"
    stale.write_text(json.dumps(edited))
    monkeypatch.setattr(fastcheck, "TABLE", stale)
    fastcheck.load_rules.cache_clear()
    try:
        assert fastcheck.load_rules() is None
        assert certainly_valid([REPO / VALID_EXAMPLES[0]]) is False
        changed = copy.deepcopy(table)  # a validator whose source changed since the fast rule was written
        changed["models"]["StorageSpec"]["fields"]["mount"]["after"][0]["source"] = "f" * 16
        stale.write_text(json.dumps(changed))
        fastcheck.load_rules.cache_clear()
        assert fastcheck.load_rules() is None
    finally:
        fastcheck.load_rules.cache_clear()


def test_the_generator_refuses_what_it_has_no_rule_for() -> None:
    from datetime import date

    from pydantic import ConfigDict, Field, field_validator

    from gpujob.model import Model

    class Aliased(Model):
        x: int = Field(alias="y")

    class Lowered(Model):
        model_config = ConfigDict(str_to_lower=True)
        x: str

    class Dated(Model):
        x: date

    class Wrapped(Model):
        x: int

        @field_validator("x", mode="wrap")
        @classmethod
        def _w(cls, value: Any, handler: Any) -> Any:
            return handler(value)

    class Escaped(Model):
        x: str = Field(pattern=r"^\d+$")

    for model in (Aliased, Lowered, Dated, Wrapped, Escaped):
        with pytest.raises(fastgen.GeneratorError):
            fastgen._model(model, [])


def test_checks_know_every_platform() -> None:
    from gpujob.model import PLATFORMS
    from gpujob.spec.checks import PLATFORMS as CHECKED

    assert CHECKED == PLATFORMS


# --- the property: mutate valid specs every way the models care about ------------------------------


def _yaml_load(text: str) -> Any:
    from ruamel.yaml import YAML

    return YAML(typ="safe").load(text)


def _yaml_dump(data: Any) -> str:
    from ruamel.yaml import YAML

    buffer = io.StringIO()
    YAML(typ="safe", pure=True).dump(data, buffer)
    return buffer.getvalue()


BASES = [_yaml_load(RUNPOD_JOB), _yaml_load(PAPERSPACE_JOB)] + [
    _yaml_load((REPO / name).read_text()) for name in VALID_EXAMPLES
]
BASES.append(  # parked: the model validator that reads defaults across sections
    {
        **BASES[0],
        "state": "parked",
        "storage": {"network_volume": {"name": "vol", "size_gb": 50}, "mount": "/workspace"},
    }
)


def _field_paths() -> list[tuple[str, ...]]:
    """Every key path the models define (a list's first item, an env entry), from the rules table."""
    table = json.loads(fastcheck.TABLE.read_text())
    out: list[tuple[str, ...]] = []

    def walk(model: str, prefix: tuple[str, ...]) -> None:
        for key, field in table["models"][model]["fields"].items():
            path = (*prefix, key)
            out.append(path)
            stack = [field["type"]]
            while stack:
                node = stack.pop()
                if node["kind"] == "model":
                    walk(node["name"], path)
                elif node["kind"] == "union":
                    stack += node["of"]
                elif node["kind"] == "list":
                    out.append((*path, 0))  # type: ignore[arg-type]
                elif node["kind"] == "dict":
                    out.append((*path, "WANDB_PROJECT"))

    walk(table["root"], ())
    return out


FIELD_PATHS = _field_paths()
MODEL_PATHS = [(), ("machine",), ("storage",), ("storage", "network_volume"), ("checkpoint",), ("run",),
               ("run", "sync"), ("run", "env"), ("teardown",), ("budget",)]  # fmt: skip
INTERESTING = [
    None, True, False, 0, 1, -1, 2, 3, 8, 9, 10, 49, 50, 100, 250, 1000, 1001, 2000, 2001, 4096, 4097, 2**40,
    0.0, 0.5, -0.5, 1.5, 4.0, float("inf"), float("-inf"), float("nan"), 1e308,
    "", " ", "1", "true", "null", "auto", "15m", "30 s", "0s", "-1h", "1.5h", "2h", "1h", "168h", "169h", "1w",
    "3651d", "99999999999999999999w", "1e400h", "15", "\u0661\u0665m",
    "runpod", "paperspace", "aws", "running", "stopped", "parked", "absent",
    "secure", "community", "static", "dynamic", "none", "standard", "high-performance", "tmux", "nohup",
    "durable", "default", "keep", "stop", "terminate", "continuous", "on_finish", "never",
    "A100-80GB", "H100-80GB", "h100-80gb", "H100-80G", "A4000", "A6000", "RTX4090", "NVIDIA A100 80GB PCIe",
    "EU-RO-1", "US-TX-3", "eu-ro-1", "ny2", "NY2", "East Coast (NY2)", "ams1", "mars",
    "bert", "Bert", "a--b", "a-", "x" * 39, "x" * 40, "ml-in-a-box", "t0nspur5", "ubuntu:22.04",
    "/workspace", "/workspace/ckpt", "/data", "/", "workspace", "/workspace/../etc", "/a/./b", "/a\nb",
    "/workspace\n", ".", "..", "./checkpoints", "../outside", "~/x", "C:/x", "a\x00b", "!x", "*.log",
    "HF_TOKEN", "RUNPOD_API_KEY", "PAPERSPACE_API_KEY", "1BAD", "MY_PASSWORD", "hf_abcdefghijklmnop",
    [], {}, ["A100-80GB"], ["A100-80GB", "H100-80GB"], [1], [None], ["EU-RO-1", "mars"], ["ny2"],
    {"a": 1}, {"WANDB_PROJECT": "x"}, {"API_TOKEN": "abc"}, {"1X": "y"}, {"name": "v", "size_gb": 10},
]  # fmt: skip
values = st.one_of(
    st.sampled_from(INTERESTING),
    st.integers(-3, 5000),
    st.text(max_size=12),
    st.lists(st.sampled_from(INTERESTING[:60]), max_size=3),
)
mutations = st.one_of(
    st.tuples(st.just("drop"), st.sampled_from(FIELD_PATHS)),
    st.tuples(st.just("set"), st.sampled_from(FIELD_PATHS), values),
    st.tuples(
        st.just("add"), st.sampled_from(MODEL_PATHS), st.sampled_from(["x", "gpus", "Name", "spot "]), values
    ),
    st.tuples(st.just("swap"), st.sampled_from(["platform"]), st.sampled_from(["runpod", "paperspace"])),
)


def _apply(spec: dict[str, Any], mutation: tuple[Any, ...]) -> None:
    kind, path = mutation[0], mutation[1]
    if kind == "swap":
        spec[path] = mutation[2]
        return
    if kind == "add":
        path = (*path, mutation[2])
    node: Any = spec
    for part in path[:-1]:
        if isinstance(node, dict):
            node = node.setdefault(part, {}) if kind != "drop" else node.get(part)
        elif isinstance(node, list) and isinstance(part, int) and part < len(node):
            node = node[part]
        else:
            return
        if node is None:
            return
    last = path[-1]
    if isinstance(node, dict):
        if kind == "drop":
            node.pop(last, None)
        else:
            node[last] = copy.deepcopy(mutation[-1])
    elif isinstance(node, list) and isinstance(last, int) and last < len(node) and kind != "drop":
        node[last] = copy.deepcopy(mutation[-1])


specs = st.tuples(st.sampled_from(range(len(BASES))), st.lists(mutations, max_size=4)).map(
    lambda pair: _mutated(*pair)
)


def _mutated(base: int, changes: list[tuple[Any, ...]]) -> dict[str, Any]:
    spec = copy.deepcopy(BASES[base])
    for change in changes:
        _apply(spec, change)
    return spec


PROPERTY = settings(max_examples=examples(400), deadline=None, suppress_health_check=[HealthCheck.too_slow])


@PROPERTY
@given(st.lists(specs, min_size=1, max_size=3))
def test_fast_ok_implies_full_ok_and_the_same_output(
    tmp_path_factory: Any, docs: list[dict[str, Any]]
) -> None:
    folder = tmp_path_factory.mktemp("jobs")
    paths = []
    for i, doc in enumerate(docs):
        path = folder / f"j{i}.job.yaml"
        path.write_text(_yaml_dump(doc), encoding="utf-8")
        paths.append(path)
    fast = certainly_valid(paths)
    full = check_files(paths)
    if fast:
        assert full == [], [str(p) for p in full]
    args = [str(p) for p in paths]
    for fmt in ("text", "json"):
        assert _run(["--format", fmt, *args], full=False) == _run(["--format", fmt, *args], full=True)


def test_every_base_spec_takes_the_fast_path(tmp_path: Path) -> None:
    # The property above starts from these, so it sees files the fast path accepts (about a sixth of its
    # mutated specs are), not only ones it leaves to the full path.
    accepted = 0
    for i, base in enumerate(BASES):
        path = tmp_path / f"b{i}.yaml"
        path.write_text(_yaml_dump(base), encoding="utf-8")
        accepted += certainly_valid([path])
    assert accepted == len(BASES)


@PROPERTY
@given(st.sampled_from(range(len(BASES))), st.data())
def test_text_level_changes_print_the_same(base: int, data: st.DataObject) -> None:
    """YAML features (anchors, tags, quoting, duplicate keys, documents, flow style) reach the shared
    reader; whatever it makes of them, both ways print the same."""
    import tempfile

    text = _yaml_dump(BASES[base])
    lines = text.splitlines(keepends=True)
    edits = data.draw(
        st.lists(
            st.tuples(
                st.integers(0, len(lines) - 1),
                st.sampled_from(
                    ["dup", "tag", "anchor", "quote", "doc", "comment", "tab", "merge", "flow", "drop", "bom"]
                ),
            ),
            max_size=3,
        )
    )
    for at, how in edits:
        line = lines[at]
        key, sep, rest = line.partition(": ")
        if how == "dup":
            lines.insert(at, line)
        elif how == "tag" and sep:
            lines[at] = f"{key}: !!str {rest}"
        elif how == "anchor" and sep:
            lines[at] = f"{key}: &a{at} {rest}"
        elif how == "quote" and sep:
            lines[at] = f'{key}: "{rest.rstrip()}"\n'
        elif how == "doc":
            lines.insert(at, "---\n")
        elif how == "comment":
            lines[at] = line.rstrip("\n") + "  # note\n"
        elif how == "tab":
            lines[at] = "\t" + line
        elif how == "merge":
            lines.insert(at, line.replace(line.lstrip(), "<<: {}\n"))
        elif how == "flow" and sep:
            lines[at] = f"{key}: [{rest.rstrip()}]\n"
        elif how == "drop":
            lines[at] = ""
        elif how == "bom" and at == 0:
            lines[at] = "\ufeff" + line
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "job.yaml"
        path.write_text("".join(lines), encoding="utf-8")
        if certainly_valid([path]):
            assert check_files([path]) == []
        assert _run([str(path)], full=False) == _run([str(path)], full=True)


# --- the profile facts are the profile's ----------------------------------------------------------


@pytest.mark.parametrize("platform", ["runpod", "paperspace"])
def test_profile_facts_equal_the_profile(platform: str) -> None:
    from gpujob.profile import load_profile
    from gpujob.profile_facts import extract, from_data

    profile = load_profile(platform)
    facts = from_data(json.loads(json.dumps(extract(profile))))  # as read back from the cache file
    assert facts.platform == profile.platform and facts.options == profile.options
    assert facts.regions == profile.regions and facts.region_aliases == profile.region_aliases
    for mine, theirs in zip(facts.gpus, profile.gpus, strict=True):
        assert (mine.alias, mine.platform_id, mine.regions) == (
            theirs.alias,
            theirs.platform_id,
            theirs.regions,
        )
        assert mine.multi_gpu_ids == theirs.multi_gpu_ids
        assert all(type(k) is int for k in mine.multi_gpu_ids)
    for name in ("container_disk_gb", "volume_gb", "volume_sizes_gb", "network_volume_gb", "max_gpu_count"):
        assert getattr(facts.limits, name) == getattr(profile.limits, name)
        assert type(getattr(facts.limits, name)) is type(getattr(profile.limits, name))
    for mine, theirs in zip(facts.auto_shutdown, profile.auto_shutdown, strict=True):
        assert (mine.kind, mine.min_hours, mine.max_hours) == (
            theirs.kind,
            theirs.min_hours,
            theirs.max_hours,
        )
    for name in [g.alias for g in profile.gpus] + ["a4000", "nope", "H100"]:
        found = profile.gpu(name)
        assert facts.gpu(name) == (None if found is None else facts.gpus[profile.gpus.index(found)])


@settings(max_examples=examples(300), deadline=None)
@given(
    machine=st.dictionaries(
        st.sampled_from(["gpu", "gpu_count", "spot", "cloud", "regions", "image", "template", "container_disk_gb",
                         "public_ip", "auto_shutdown", "max_price_per_hour", "x"]),
        values,
        max_size=7,
    ),
    storage=st.dictionaries(st.sampled_from(["volume_gb", "mount", "network_volume"]), values, max_size=3),
    platform=st.sampled_from(["runpod", "paperspace"]),
)  # fmt: skip
def test_platform_checks_answer_the_same_on_the_facts(machine: dict, storage: dict, platform: str) -> None:
    from gpujob.profile_facts import load_facts
    from gpujob.spec.checks import platform_problems

    data = {"platform": platform, "machine": machine, "storage": storage}
    assert platform_problems(data, load_facts) == platform_problems(data)


def test_facts_cache_is_private_keyed_and_optional(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from gpujob import profile_facts

    monkeypatch.setenv("GPUJOB_PROFILE_CACHE", str(tmp_path / "cache"))
    first = profile_facts.load_facts("runpod")
    (path,) = (tmp_path / "cache").glob("runpod-facts-*.json")
    assert path.stat().st_mode & 0o777 == 0o600
    assert profile_facts.load_facts("runpod") == first
    data = json.loads(path.read_text())
    data["regions"] = ["ANYWHERE"]
    path.write_text(json.dumps(data))
    os.chmod(path, 0o666)  # a file others may write is never trusted
    assert profile_facts.load_facts("runpod") == first
    raw = (profile_facts.profiles_dir() / "runpod.yaml").read_bytes()
    assert profile_facts._cache_path("runpod", raw + b"\n# edited\n") != path
    monkeypatch.setenv("GPUJOB_PROFILE_CACHE", "off")
    assert profile_facts.load_facts("runpod") == first


# --- the reader's libyaml events come straight from its CParser: the same events as YAML.parse ----


def _event_rows(events: Any) -> list[tuple[Any, ...]]:
    rows = []
    for ev in events:
        marks = (ev.start_mark.line, ev.start_mark.column, ev.end_mark.line, ev.end_mark.column)
        attrs = tuple(
            repr(getattr(ev, a, None)) for a in ("anchor", "tag", "implicit", "value", "style", "flow_style")
        )
        rows.append((type(ev), marks, attrs))
    return rows


@settings(max_examples=examples(300), deadline=None)
@given(
    st.one_of(
        st.text(alphabet=st.sampled_from(list("ab:- \n\t[]{}&*!|>'\",#%@`?1.~<")), max_size=120),
        st.sampled_from(range(len(BASES))).map(lambda i: _yaml_dump(BASES[i])),
    )
)
def test_parser_events_are_those_of_yaml_parse(text: str) -> None:
    from gpujob.spec.scan import _events, _fast_parser

    yaml = _fast_parser()

    def collect(events: Any) -> tuple[list[tuple[Any, ...]], str | None]:
        out: list[Any] = []
        try:
            for ev in events:
                out.append(ev)
        except Exception as exc:
            return _event_rows(out), f"{type(exc).__name__}: {exc}"
        return _event_rows(out), None

    assert collect(_events(yaml, text, True)) == collect(yaml.parse(io.StringIO(text)))


# --- a plain document reads as the full reader reads it --------------------------------------------

YAMLISH = st.text(alphabet=st.sampled_from(list("ab1:- \n\t[]{}&*!|>'\",#%@`?.~<y0xe")), max_size=120)


def _documents() -> st.SearchStrategy[str]:
    """Small documents of the scalars and keys YAML resolves in surprising ways (1.1 booleans, octals,
    dates, merge keys, quoting, escapes, tags, anchors)."""
    keys = st.sampled_from(
        ["a", "b", "1", "01", "true", "True", "null", "~", "<<", "'a'", '"1"', "x y", "? c", "[k]"]
    )
    scalars = st.sampled_from(
        ["1", "01", "0o17", "0x1F", "1_000", "1e3", "1.5", ".inf", ".nan", "-0", "yes", "no", "on", "true",
         "~", "null", "", "'x'", '"\\ud800"', '"a\\tb"', "2024-01-02", "2024-01-02 03:04:05", "!!str 1",
         "!!int 1", "&a 1", "*a", "=", "<<", "a # c", "a#b", "'it''s'", "|\n  block", ">\n  folded", "15m",
         "[1, '2', x]", "{p: q}", "[]", "{}", "- x"]
    )  # fmt: skip
    entries = st.lists(st.tuples(keys, scalars), min_size=1, max_size=5)
    flat = entries.map(lambda es: "\n".join(f"{k}: {v}" for k, v in es))
    nested = st.tuples(keys, entries).map(lambda t: f"{t[0]}:\n" + "\n".join(f"  {k}: {v}" for k, v in t[1]))
    flow = entries.map(lambda es: "{" + ", ".join(f"{k}: {v}" for k, v in es) + "}")
    body = st.one_of(st.lists(st.one_of(flat, nested), min_size=1, max_size=3).map("\n".join), flow)
    prefix = st.sampled_from(["", "---\n", "%YAML 1.1\n---\n", "# c\n", "\ufeff"])
    suffix = st.sampled_from(["", "\n", "\n...\n", "\n---\nz: 1\n"])
    return st.tuples(prefix, body, suffix).map("".join)


@settings(max_examples=examples(600), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.one_of(
        YAMLISH,
        _documents(),
        st.sampled_from(range(len(BASES))).map(lambda i: _yaml_dump(BASES[i])),
        specs.map(_yaml_dump),
    )
)
def test_a_plain_document_reads_as_parse_file_reads_it(text: str) -> None:
    import tempfile

    from gpujob.spec.scan import plain_document
    from gpujob.spec.yamlsafe import _plain, parse_file

    document = plain_document(text)
    if type(document) is not dict:
        return
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "job.yaml"
        path.write_text(text, encoding="utf-8")
        parsed = parse_file(path, "job.yaml")
    assert parsed.problems == [] and parsed.data is not None
    assert parsed.data == _plain(document)
    assert json.dumps(parsed.data, default=repr) == json.dumps(_plain(document), default=repr)  # types too


def test_what_a_plain_document_refuses() -> None:
    from gpujob.spec.scan import plain_document

    assert plain_document("a: 1\nb: [x, {c: d}]\n") == {"a": 1, "b": ["x", {"c": "d"}]}
    for text in ("a: &x 1\nb: *x\n", "a: !!str 1\n", "<<: {a: 1}\n", "a: 1\na: 2\n", "1: a\n01: b\n",
                 "a: 1\n'a': 2\n", "1: a\n'1': b\n", "a: 1\n---\nb: 2\n", "? [a]\n: b\n", "a: [\n",
                 "[" * 40 + "]" * 40):  # fmt: skip
        assert plain_document(text) is None, text
