"""`gpujob --help` must stay fast: no heavy module may be imported to list commands."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

HEAVY = ("httpx", "asyncssh", "deepdiff", "jinja2", "rich", "ruamel", "pydantic")


def _modules_after(args: list[str]) -> set[str]:
    code = (
        "import sys, json\n"
        "from gpujob.cli.main import cli\n"
        "try:\n"
        f"    cli.main(args={args!r}, standalone_mode=False)\n"
        "except SystemExit:\n"
        "    pass\n"
        # a module without a spec was never imported (cli/main.py's stand-in for pydantic's plugin loader)
        "print('\\n' + json.dumps(sorted(m for m, mod in sys.modules.items() if getattr(mod, '__spec__', None))))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    return set(json.loads(out.strip().splitlines()[-1]))


def test_help_imports_no_heavy_module() -> None:
    loaded = _modules_after(["--help"])
    assert not [m for m in loaded if m.split(".")[0] in HEAVY]


def test_help_lists_every_command_with_an_example() -> None:
    from gpujob.cli.main import COMMANDS

    out = subprocess.run(
        [sys.executable, "-m", "gpujob", "--help"], capture_output=True, text=True, check=True
    ).stdout
    for name, (_module, help_) in COMMANDS.items():
        assert name in out
        assert "e.g. gpujob" in help_


def test_version() -> None:
    from gpujob import __version__

    out = subprocess.run(
        [sys.executable, "-m", "gpujob", "--version"], capture_output=True, text=True, check=True
    ).stdout
    assert __version__ in out


def test_validate_imports_no_network_ssh_diff_template_or_ui_module() -> None:
    example = str(Path(__file__).resolve().parents[2] / "examples" / "runpod-ondemand" / "job.yaml")
    loaded = _modules_after(["validate", example])
    assert "gpujob.spec.yamlsafe" in loaded  # the command really read the file
    heavy = ("httpx", "asyncssh", "deepdiff", "jinja2", "rich")
    assert not [m for m in loaded if m.split(".")[0] in heavy]


def test_process_entry_keeps_exit_codes_and_output(tmp_path: Path) -> None:
    # main() freezes the heap at exit (the interpreter's final collections skip it); the exit code and
    # every line written must come through unchanged, and the installed script must use the same entry.
    import tomllib

    missing = tmp_path / "missing.yaml"
    bad = subprocess.run(
        [sys.executable, "-m", "gpujob", "validate", str(missing)], capture_output=True, text=True
    )
    assert bad.returncode == 1
    assert bad.stdout == f"{missing}:1:1: no such file\n1 problem(s) in 1 file(s)\n"
    example = Path(__file__).resolve().parents[2] / "examples" / "runpod-ondemand" / "job.yaml"
    good = subprocess.run(
        [sys.executable, "-m", "gpujob", "validate", str(example)], capture_output=True, text=True
    )
    assert (good.returncode, good.stdout) == (0, "ok: 1 file(s) valid\n")
    pyproject = tomllib.loads((Path(__file__).resolve().parents[2] / "pyproject.toml").read_text())
    assert pyproject["project"]["scripts"]["gpujob"] == "gpujob.cli.main:main"
