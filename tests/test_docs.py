"""The README and docs/: short enough to read, links that lead somewhere, the job file reference current
with the models, and the documented shell completion line working as printed."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()
PAGES = sorted((ROOT / "docs").glob("*.md"))
LINK = re.compile(r"\]\(([^)#\s]+)(#[^)\s]*)?\)")


def test_the_readme_is_at_most_2000_words_and_opens_with_the_two_commands() -> None:
    assert len(README.split()) <= 2000
    first_screen = "\n".join(README.splitlines()[:24])
    assert "make install && make demo" in first_screen
    assert "make install && make test" in first_screen


def test_the_readme_says_how_long_the_tests_take_and_names_the_fast_ones() -> None:
    said = re.search(r"about (\d+) minutes on 2 cores", README)
    assert said and int(said.group(1)) < 30  # CI's budget on a 2-core machine is 30 minutes
    assert "make test-fast" in README
    makefile = (ROOT / "Makefile").read_text()
    assert re.search(r"^test-fast:", makefile, re.M)  # what the README names exists


def test_make_tests_help_line_states_the_readmes_time_and_it_prints_the_slowest_tests() -> None:
    said = re.search(r"about (\d+) minutes on 2 cores", README)
    makefile = (ROOT / "Makefile").read_text()
    rule = re.search(r"^test:.*## (.*)\n\t(.*)$", makefile, re.M)
    assert said and rule, "README states the suite's time and the Makefile has a test rule"
    assert f"~{said.group(1)} min on 2 cores" in rule.group(1)  # one measured figure, said twice
    assert "--durations=10" in rule.group(2)  # the next slow test is seen the day it lands


def test_the_topic_pages_exist_and_the_index_links_each() -> None:
    names = {p.name for p in PAGES}
    topics = {"concepts.md", "job-file.md", "platforms.md", "gitops.md", "team-state.md", "watch.md"}
    topics |= {"performance.md", "security.md", "README.md"}
    assert topics <= names
    index = (ROOT / "docs" / "README.md").read_text()
    assert "## More" in index and "More (pages added since" in README  # where later pages add their line
    # Each page is linked from the index or from the README (where later pages add their line).
    unlinked = [n for n in names - {"README.md"} if f"]({n})" not in index and f"](docs/{n})" not in README]
    assert not unlinked, f"neither docs/README.md nor README.md links {unlinked}"


@pytest.mark.parametrize("page", [ROOT / "README.md", *PAGES], ids=lambda p: p.name)
def test_every_relative_link_leads_to_a_file(page: Path) -> None:
    broken = []
    for target, _anchor in LINK.findall(page.read_text()):
        if "://" in target or target.startswith("mailto:"):
            continue
        if not (page.parent / target).exists():
            broken.append(target)
    assert not broken, f"{page.relative_to(ROOT)} links to missing {broken}"


def test_the_job_file_reference_is_current_with_the_schema() -> None:
    res = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "job_reference.py"), "--check"],
        capture_output=True,
        text=True,
    )
    assert res.returncode == 0, res.stderr
    page = (ROOT / "docs" / "job-file.md").read_text()
    for key in ("`checkpoint`", "`interval`", "`run.sync`", "`machine`"):
        assert key in page


def test_the_documented_completion_line_completes_commands() -> None:
    from gpujob.cli.main import cli

    assert 'eval "$(_GPUJOB_COMPLETE=bash_source gpujob)"' in README
    runner = CliRunner()
    script = runner.invoke(cli, [], prog_name="gpujob", env={"_GPUJOB_COMPLETE": "bash_source"})
    assert "complete -o nosort -F _gpujob_completion gpujob" in script.output
    env = {"_GPUJOB_COMPLETE": "bash_complete", "COMP_WORDS": "gpujob pl", "COMP_CWORD": "1"}
    words = runner.invoke(cli, [], prog_name="gpujob", env=env).output.split()
    assert "plain,plan" in words


# --- the examples the pages show (#41): every fenced job file validates and plans with no error or
# warning the page does not name; every gpujob command a page shows exists with the flags it shows.
# In process: one loader, one planner (offline: nothing live), one click tree.

FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```", re.M | re.S)
# what a fragment is completed with: a job that draws no warning of its own
BASE = {
    "version": 1, "name": "docs", "platform": "runpod",
    "machine": {"gpu": ["RTX4090"], "cloud": "secure", "regions": ["EU-RO-1"],
                "image": "runpod/pytorch@sha256:" + "3f" * 32},
    "storage": {"mount": "/workspace", "network_volume": {"name": "ckpts", "size_gb": 20}},
    "checkpoint": {"dir": "/workspace/ckpt", "interval": "15m"},
    "run": {"command": "python train.py"},
    "teardown": {"on_finish": "terminate", "on_failure": "stop"},
}  # fmt: skip
NOT_A_JOB_FILE = {("pr-review.md", 0): "a GitHub Actions workflow step (env: and steps:)"}
ONE_PER_LINE = {("hostile-input.md", 0): "checkpoint"}  # each line: one way to write checkpoint.verify


def _blocks(langs: tuple[str, ...]) -> list[tuple[Path, int, str]]:
    out = []
    for page in [ROOT / "README.md", *PAGES]:
        found = [m.group(2) for m in FENCE.finditer(page.read_text()) if m.group(1) in langs]
        out += [(page, i, body) for i, body in enumerate(found)]
    return out


def _merge(base: dict, over: dict) -> dict:
    out = dict(base)
    for k, v in over.items():
        out[k] = _merge(base[k], v) if isinstance(v, dict) and isinstance(base.get(k), dict) else v
    return out


def _job_files(page: Path, i: int, body: str) -> list[dict]:
    """The job files a yaml block stands for: itself when whole, else BASE completed by it; `, ...}` is
    the pages' elision."""
    import yaml

    body = re.sub(r",\s*\.\.\.\s*}", "}", body)
    parent = ONE_PER_LINE.get((page.name, i))
    if parent is not None:
        lines = [yaml.safe_load(line) for line in body.splitlines() if line.strip()]
        return [_merge(BASE, {parent: line}) for line in lines]
    data = yaml.safe_load(body)
    assert isinstance(data, dict), f"{page.name} yaml block {i} is no mapping"
    return [data if "version" in data else _merge(BASE, data)]


YAML_BLOCKS = _blocks(("yaml", "yml"))


@pytest.mark.parametrize("page,i,body", YAML_BLOCKS, ids=[f"{p.name}-{i}" for p, i, _ in YAML_BLOCKS])
def test_every_yaml_example_validates_and_plans_with_only_the_findings_its_page_names(
    page: Path, i: int, body: str, tmp_path: Path
) -> None:
    import dataclasses
    import json
    from datetime import UTC, datetime

    from gpujob.live import LiveState
    from gpujob.plan.planner import build_plan
    from gpujob.spec.load import check_files, load_specs

    if (page.name, i) in NOT_A_JOB_FILE:
        pytest.skip(NOT_A_JOB_FILE[(page.name, i)])
    if body.lstrip().startswith("# gpujob.yaml"):  # the team's state block, read as gpujob reads it
        from gpujob.state.config import read_state_block

        (tmp_path / "gpujob.yaml").write_text(body)
        assert read_state_block(tmp_path / "gpujob.yaml") is not None
        return
    text = page.read_text()
    for n, job in enumerate(_job_files(page, i, body)):
        path = tmp_path / f"{n}.job.yaml"
        path.write_text(json.dumps(job))  # JSON is YAML whose strings stay strings ("1e-3")
        assert check_files([path]) == [], (
            f"{page.name} yaml block {i}: {[str(p) for p in check_files([path])]}"
        )
        loaded = [dataclasses.replace(ls, project="docsproj") for ls in load_specs([path])]
        secrets = {s: "set" for ls in loaded if ls.spec.run for s in ls.spec.run.secrets}
        now = datetime.now(UTC)
        plan = build_plan(loaded, LiveState(read_at=now), now=now, env=secrets)
        unnamed = [f"{f.severity} [{f.code}] {f.summary}" for f in plan.all_findings()
                   if f.severity != "info" and f.code not in text]  # fmt: skip
        assert not unnamed, (
            f"{page.name} yaml block {i} plans with findings the page does not name: {unnamed}"
        )


def _commands(line: str) -> list[list[str]]:
    """Each `gpujob ...` command on a shell line (after `$ `, `X=Y `, inside `$(...)`), as its words."""
    import shlex

    line = re.sub(r"\s#.*$", "", line.strip().removeprefix("$ "))
    inner = re.findall(r"\$\(([^)]*)\)", line)
    out = []
    for part in [re.sub(r"\$\([^)]*\)", "X", line), *inner]:
        for seg in re.split(r"&&|\|\||;|\|", part):
            try:
                words = shlex.split(seg)
            except ValueError:
                continue
            while words and re.match(r"^\w+=", words[0]):
                words = words[1:]
            if words[:1] == ["gpujob"]:
                out.append(words[1:])
    return out


def _shown_commands() -> list[tuple[str, list[str]]]:
    shown = []
    for page, _i, body in _blocks(("", "sh", "bash", "console", "shell")):
        for line in body.splitlines():
            shown += [(page.name, c) for c in _commands(line)]
    for page in [ROOT / "README.md", *PAGES]:  # and the ones prose names in a code span
        for span in re.findall(r"`(gpujob [^`]+)`", page.read_text()):
            shown += [(page.name, c) for c in _commands(span)]
    return shown


def test_every_gpujob_command_a_page_shows_exists_with_the_flags_it_shows() -> None:
    import click

    from gpujob.cli.main import cli

    wrong = []
    shown = _shown_commands()
    for page, words in shown:
        cmd: click.Command = cli
        ctx = click.Context(cli)
        rest = list(words)
        while isinstance(cmd, click.Group) and rest and not rest[0].startswith("-"):
            if re.search(r"[<>…]|\.\.\.|^[A-Z]+$", rest[0]):
                break  # a placeholder (`gpujob <command>`), not a name
            sub = cmd.get_command(ctx, rest[0])
            if sub is None and type(cmd).parse_args is not click.Group.parse_args and "show" in cmd.commands:
                cmd = cmd.commands["show"]  # `gpujob state [JOBFILE]` is `gpujob state show [JOBFILE]`
                break
            if sub is None:
                wrong.append(f"{page}: gpujob {' '.join(words)}: no command {rest[0]!r}")
                break
            cmd, rest = sub, rest[1:]
        flags = {o for p in cmd.params for o in [*p.opts, *p.secondary_opts]} | {"--help", "-h"}
        if words[:2] == ["sim", "inject"] and len(words) > 2:  # a fault's own --key value options
            from gpujob.sim.fault_options import OPTIONS

            if words[2] not in OPTIONS:
                wrong.append(f"{page}: gpujob {' '.join(words)}: no fault {words[2]!r}")
                continue
            flags |= {"--" + k.replace("_", "-") for k in OPTIONS[words[2]][0]}
        for word in rest[: rest.index("--")] if "--" in rest else rest:
            name = word.split("=", 1)[0]
            if name.startswith("-") and name != "-" and name not in flags:
                wrong.append(f"{page}: gpujob {' '.join(words)}: {cmd.name} has no {name}")
    assert len(shown) > 40 and not wrong, "\n".join(wrong)
