"""Every examples/broken/<name>.yaml yields exactly the lines in <name>.expected (paths from the repo root)."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from gpujob.cli.main import cli

BROKEN = Path(__file__).resolve().parents[2] / "examples" / "broken"
CASES = sorted(p.name for p in BROKEN.glob("*.yaml"))
REQUIRED = {
    "malformed-yaml", "duplicate-key", "unknown-key-typo", "wrong-type", "bad-duration", "negative-size",
    "spot-on-paperspace", "unknown-gpu", "unknown-region", "yaml-bomb", "python-object-tag",
    "missing-required", "auto-without-mtbf", "several-problems",
}  # fmt: skip


def test_the_catalogue_is_complete() -> None:
    names = {Path(c).stem for c in CASES}
    assert names >= REQUIRED and len(names) >= 12
    assert {p.stem for p in BROKEN.glob("*.expected")} == names


@pytest.mark.parametrize("name", CASES)
def test_broken_example_output_is_exact(name: str, repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(repo)
    rel = f"examples/broken/{name}"
    result = CliRunner().invoke(cli, ["validate", rel])
    expected = (BROKEN / name).with_suffix(".expected").read_text(encoding="utf-8")
    assert result.exit_code == 1
    # After a reviewed change of wording or profile data, regenerate from the repo root with:
    #   for f in examples/broken/*.yaml; do gpujob validate "$f" > "${f%.yaml}.expected"; done
    assert result.stdout == expected, f"{rel}: output differs from {rel.removesuffix('.yaml')}.expected"
    lines = expected.splitlines()
    assert lines[-1].endswith("problem(s) in 1 file(s)") and len(lines) >= 2
    assert all(line.startswith(f"{rel}:") for line in lines[:-1])
    assert "Traceback" not in result.output
    assert isinstance(result.exception, SystemExit)  # a clean exit(1), never an uncaught error
