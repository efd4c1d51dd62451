"""Text from a machine as gpujob prints it (gpujob.redact.from_machine): nothing a terminal acts on gets
through unless raw, and known secrets are masked either way."""

from __future__ import annotations

import pytest

from gpujob import redact


def test_escapes_osc_bell_cr_backspace_c1_and_bidi_are_made_visible() -> None:
    hostile = (
        "\x1b[2J\x1b[H"  # clear the screen, cursor home
        "\x1b]52;c;cm0gLXJmIH4=\x07"  # OSC 52: write the clipboard, BEL-terminated
        "\x1b[32mPlan: 0 to destroy\x1b[0m"  # a forged green plan line
        "ok\rOVERWRITE\x08\x9b31m\u202eevil\u2066\x00"
    )
    shown = redact.visible(hostile + "\n\tnext\r\n")
    assert not any(ch in shown for ch in "\x1b\x07\r\x08\x9b\u202e\u2066\x00")
    assert shown == (
        "\\x1b[2J\\x1b[H\\x1b]52;c;cm0gLXJmIH4=\\x07\\x1b[32mPlan: 0 to destroy\\x1b[0m"
        "ok\\rOVERWRITE\\x08\\x9b31m\\u202eevil\\u2066\\x00\n\tnext\n"
    )


def test_ordinary_text_passes_unchanged() -> None:
    text = "step 12 loss 0.53 — ünïcode ✓\n\tindented\n"
    assert redact.visible(text) == text


def test_secrets_and_api_keys_are_masked_raw_or_not(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(redact, "_VALUES", set())
    monkeypatch.setenv("RUNPOD_API_KEY", "rp_key_never_shown_1")
    monkeypatch.setenv("PAPERSPACE_API_KEY", "ps_key_never_shown_2")
    redact.register("hf_run_secret_3")
    text = "\x1b[31mhf_run_secret_3 rp_key_never_shown_1 ps_key_never_shown_2\n"
    assert redact.from_machine(text) == "\\x1b[31m*** *** ***\n"
    assert redact.from_machine(text, raw=True) == "\x1b[31m*** *** ***\n"


def test_an_error_quoting_the_machine_is_shown_the_same_way(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from gpujob.cli.main import run_command
    from gpujob.errors import RemoteCommandError

    monkeypatch.setattr(redact, "_VALUES", set())
    redact.register("hf_run_secret_4")

    def fails() -> int:
        raise RemoteCommandError("cat run.log", 1, "\x1b]52;c;eA==\x07 token hf_run_secret_4")

    with pytest.raises(SystemExit) as code:
        run_command(fails)
    err = capsys.readouterr().err
    assert code.value.code == 1 and "\\x1b]52;c;eA==\\x07 token ***" in err
    assert "\x1b" not in err and "hf_run_secret_4" not in err
