"""What gpujob shows of text it does not control: known secret values masked, and text from a machine
made safe for a terminal.

API clients register their key; loading a job file registers the values of the env vars its
run.secrets names (they are about to be passed over SSH). `redact(text)` replaces each registered
value, and its URL-encoded form, with ***. Values are kept in memory only, never written anywhere.

`from_machine(text, raw=False)` is how every command shows text read from a pod or machine (its log,
the status log line): control characters made visible (`\\x1b[2J`, not a cleared screen; no OSC 52
clipboard write, bell, carriage-return overwrite or bidi reordering reaches the terminal), unless
`raw`; secrets are masked either way."""

from __future__ import annotations

import os
from collections.abc import Mapping
from urllib.parse import quote

_VALUES: set[str] = set()
_MIN_LEN = 6  # shorter strings would redact ordinary words; such a "secret" protects nothing anyway


def register(value: str | None) -> None:
    if value and len(value.strip()) >= _MIN_LEN:
        _VALUES.add(value.strip())


def register_api_keys(env: Mapping[str, str] | None = None) -> None:
    """The platforms' account keys in this environment, whether or not a client was opened yet."""
    from gpujob.config import API_KEY_ENV

    e = os.environ if env is None else env
    for name in API_KEY_ENV.values():
        register(e.get(name))


def redact(text: str) -> str:
    for value in sorted(_VALUES, key=len, reverse=True):
        for form in {value, quote(value, safe="")}:
            if form in text:
                text = text.replace(form, "***")
    return text


def visible(text: str) -> str:
    """Every character a terminal would act on, shown as an escape; newlines and tabs kept."""
    from gpujob.safe import for_terminal

    return for_terminal(text, lines=True)


def from_machine(text: str, *, raw: bool = False) -> str:
    """Text read from a machine as gpujob prints it: secrets masked, and (unless raw) made visible."""
    register_api_keys()
    return redact(text if raw else visible(text))
