"""checkpoint.verify's output: a failed check keeps a bounded tail of its stderr, control characters visible."""

from __future__ import annotations

import asyncio
from pathlib import Path

from gpujob import verify


def test_a_failed_check_keeps_the_tail_of_its_stderr(tmp_path: Path) -> None:
    script = tmp_path / "v.sh"
    script.write_text(
        'echo "to stdout"\n'
        'i=0; while [ $i -lt 100 ]; do echo "line $i" >&2; i=$((i+1)); done\n'
        "printf 'red \\033[31mX\\033[0m\\rback\\n' >&2\n"
        "exit 3\n"
    )
    ok, text = asyncio.run(verify.run_async(f"sh {script} {{file}}", tmp_path / "ckpt"))
    assert not ok
    lines = text.splitlines()
    assert len(lines) == verify.OUTPUT_LINES and lines[0] == "line 81"
    assert lines[-1] == "red \\x1b[31mX\\x1b[0m\\rback"  # escapes shown, never sent to the terminal
    assert "to stdout" not in text and "\x1b" not in text


def test_the_tail_is_bounded_in_characters_and_falls_back_to_stdout() -> None:
    long = b"x" * 100_000
    assert len(verify.output_tail(b"", long)) == verify.OUTPUT_MAX
    assert verify.output_tail(b"only stdout\n", b"  \n") == "only stdout"
    assert verify.visible("\x9b2J\x7f\ttab\nnl") == "\\x9b2J\\x7f\ttab\nnl"


def test_a_command_that_would_paste_the_name_into_code_is_never_run(tmp_path: Path) -> None:
    # validate refuses it; a job file edited since the plan meets the same check where it would run
    ck = tmp_path / "a;touch PWNED;b"
    ck.write_text("x")
    for template in ('sh -c "cat {file}"', "python3 -c \"open('{file}')\"", "eval cat {file}"):
        ok, text = verify.run(template, ck, cwd=tmp_path)
        assert not ok and "checkpoint.verify not run" in text and "safe forms" in text
        ok, text = asyncio.run(verify.run_async(template, ck, cwd=tmp_path))
        assert not ok and "checkpoint.verify not run" in text
    assert not (tmp_path / "PWNED").exists()


def test_every_documented_form_passes_a_name_with_spaces_and_globs_as_one_argument(tmp_path: Path) -> None:
    ck = tmp_path / "a b * $(touch PWNED) `touch PWNED`;c"
    ck.write_text("x")
    check = 'test $# -eq 1 && test -f "$1"'  # exactly one argument, naming the file
    (tmp_path / "one.sh").write_text(check + "\n")
    for template in (
        "sh one.sh {file}",
        'sh one.sh "{file}"',
        "sh one.sh '{file}'",
        "sh -c 'sh one.sh {file}'",
        "sh -c 'sh one.sh \"{file}\"'",
    ):
        assert verify.placement_problem(template) is None, template
        ok, text = verify.run(template, ck, cwd=tmp_path)
        assert ok, (template, verify.shell_text(template), text)
    assert not (tmp_path / "PWNED").exists()
