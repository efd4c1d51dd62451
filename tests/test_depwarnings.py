"""The dependencies' known warnings are kept from the user's screen, and only those."""

from __future__ import annotations

import subprocess
import sys
import warnings

from gpujob.depwarnings import KNOWN, quiet_known

PROBE = """
import warnings
from gpujob.depwarnings import quiet_known
{setup}
import asyncssh  # cryptography >= 51 warns here about DSA, unless filtered
warnings.warn("a new warning nobody filtered", UserWarning)
warnings.warn("DSA is deprecated", UserWarning)  # the message alone, from another category: shown
"""


def run(setup: str) -> str:
    code = PROBE.format(setup=setup)
    return subprocess.run(
        [sys.executable, "-W", "default", "-c", code], capture_output=True, text=True, timeout=60
    ).stderr


def test_the_known_warning_is_filtered_and_a_new_one_still_shows() -> None:
    err = run("quiet_known()")
    assert "CryptographyDeprecationWarning" not in err, err
    assert "UserWarning: a new warning nobody filtered" in err, err
    assert "UserWarning: DSA is deprecated" in err, err  # filtered by category and module, not text


def test_each_known_entry_names_why_and_a_raising_module() -> None:
    for module, name, message, raiser, why in KNOWN:
        assert module and name and message and raiser.startswith("asyncssh") and len(why) > 20


def test_the_filter_is_never_a_blanket_ignore() -> None:
    with warnings.catch_warnings():
        warnings.resetwarnings()
        quiet_known()
        ignores = [f for f in warnings.filters if f[0] == "ignore"]
    assert ignores and all(f[1] is not None and f[3] is not None for f in ignores)  # message and module
    assert all(f[2] is not Warning and f[2] is not UserWarning for f in ignores)


ENTRY = """
import sys
sys.argv = ["gpujob", "--version"]
from gpujob.cli.main import main
try:
    main()
except SystemExit:
    pass
import asyncssh  # what a command imports after the entry ran
"""


def test_the_cli_entry_installs_it() -> None:
    out = subprocess.run(
        [sys.executable, "-W", "default", "-c", ENTRY], capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr
    assert "gpujob" in out.stdout and "Warning" not in out.stderr, out.stderr
