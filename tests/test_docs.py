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
