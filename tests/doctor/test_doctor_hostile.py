"""`gpujob doctor` prints what the API says about itself (error text, field names) through the output
boundary (gpujob.safe): a GraphQL error carrying an OSC 52 clipboard write, a screen clear and a
forged report line reaches the terminal as visible text; the JSON report keeps the real text."""

from __future__ import annotations

import json
from typing import Any

from tests.doctor.test_doctor import _doctor
from tests.fakeapi.server import Reply, RunningFake

HOSTILE = "\x1b]52;c;cm0gLXJmIH4=\x07\x1b[2J\x1b[Hboom\nOK       query myself  all good\u202e"


def test_graphql_error_text_reaches_the_terminal_only_as_visible_text(fake: RunningFake) -> None:
    def graphql(body: dict[str, Any]) -> Reply:
        return Reply(200, {"errors": [{"message": HOSTILE}], "data": None})

    fake.apis._graphql = graphql  # type: ignore[method-assign]
    done = _doctor(fake.env, "--platform", "runpod")
    out = done.stdout + done.stderr
    assert "boom" in out, out  # the error is reported ...
    assert "\x1b" not in out and "\x07" not in out and "\u202e" not in out  # ... inert
    assert "\\x1b]52;c;cm0gLXJmIH4=\\x07\\x1b[2J\\x1b[Hboom\\nOK" in out, out
    assert not any(line.startswith("OK       query myself") for line in out.splitlines())  # no forged line

    report = json.loads(_doctor(fake.env, "--platform", "runpod", "--format", "json").stdout)
    details = " ".join(r["detail"] for r in report["results"])
    assert "\x1b]52;c;" in details  # JSON: the real text (json.dumps escapes it on the wire)
