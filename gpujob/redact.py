"""Known secret values, so any text gpujob shows can be scrubbed of them.

API clients register their key; loading a job file registers the values of the env vars its
run.secrets names (they are about to be passed over SSH). `redact(text)` replaces each registered
value, and its URL-encoded form, with ***. Values are kept in memory only, never written anywhere."""

from __future__ import annotations

from urllib.parse import quote

_VALUES: set[str] = set()
_MIN_LEN = 6  # shorter strings would redact ordinary words; such a "secret" protects nothing anyway


def register(value: str | None) -> None:
    if value and len(value.strip()) >= _MIN_LEN:
        _VALUES.add(value.strip())


def redact(text: str) -> str:
    for value in sorted(_VALUES, key=len, reverse=True):
        for form in {value, quote(value, safe="")}:
            if form in text:
                text = text.replace(form, "***")
    return text
