"""checkpoint.verify's command, as the job file writes it: where `{file}` may stand.

The checkpoint's path is remote-controlled text (a pod names its files), so it never becomes shell
text. The command runs under `/bin/sh -c` with the path in the environment variable
GPUJOB_CHECKPOINT_FILE (and as `$1`); every `{file}` in the command is rewritten (shell_text) to a
quoted reference to that variable, chosen by where the placeholder stands:

  python3 v.py {file}        ->  python3 v.py "$GPUJOB_CHECKPOINT_FILE"
  python3 v.py "{file}"      ->  python3 v.py "${GPUJOB_CHECKPOINT_FILE}"
  python3 v.py '{file}'      ->  python3 v.py "$GPUJOB_CHECKPOINT_FILE"
  sh -c 'load {file}'        ->  sh -c 'load "$GPUJOB_CHECKPOINT_FILE"'   (the inner shell expands it)
  sh -c 'load "{file}"'      ->  sh -c 'load "${GPUJOB_CHECKPOINT_FILE}"'

A parameter expansion's value is never parsed as code, so a file named `x$(touch PWNED)` is just a
name. A command without `{file}` can read the variable itself.

Unless the expanded value is pasted into text that is parsed again: `sh -c "python3 v.py {file}"` or
`python3 -c "open('{file}')"` (the outer shell expands the variable inside the double quotes, and the
inner shell or Python reads the name as code), `eval ... {file}`, `sh -c {file}`, a here-document.
placement_problem() finds those, at any depth (the code of `sh -c '...'` is checked the same way), and
validate refuses them (gpujob.jobfile.rules.verify_command), showing the safe forms. Pure text rules
(kernel): running the check is gpujob.verify's.
"""

from __future__ import annotations

import re

ENV = "GPUJOB_CHECKPOINT_FILE"
PLACEHOLDER = "{file}"


def shell_text(template: str) -> str:
    """The verify command with every `{file}` replaced by a quoted reference to $GPUJOB_CHECKPOINT_FILE."""
    out: list[str] = []
    state = "plain"  # plain | single | double
    i, n = 0, len(template)
    while i < n:
        if template.startswith(PLACEHOLDER, i):
            if state == "plain":
                out.append(f'"${ENV}"')
            elif state == "double":
                out.append(f"${{{ENV}}}")
            elif out and out[-1] == "'" and template.startswith("'", i + len(PLACEHOLDER)):
                out[-1] = f'"${ENV}"'  # '{file}' as a whole word: the quotes go with the placeholder
                i += len(PLACEHOLDER) + 1
                state = "plain"
                continue
            elif out and out[-1] == '"' and template.startswith('"', i + len(PLACEHOLDER)):
                out.append(f"${{{ENV}}}")  # sh -c '... "{file}" ...': the inner double quotes quote it
            else:
                out.append(f'"${ENV}"')  # code for an inner shell, which expands the variable itself
            i += len(PLACEHOLDER)
            continue
        c = template[i]
        if state == "plain":
            if c == "\\" and i + 1 < n:
                out.append(template[i : i + 2])
                i += 2
                continue
            state = {"'": "single", '"': "double"}.get(c, "plain")
        elif state == "double":
            if c == "\\" and i + 1 < n:
                out.append(template[i : i + 2])
                i += 2
                continue
            if c == '"':
                state = "plain"
        elif c == "'":
            state = "plain"
        out.append(c)
        i += 1
    return "".join(out)


# Programs whose -c/-e argument is code, and shells whose -c code expands "$GPUJOB_CHECKPOINT_FILE" itself.
SHELLS = {"sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "busybox"}
INTERPRETERS = SHELLS | {
    "python", "python2", "python3", "pypy", "pypy3", "perl", "ruby", "node", "nodejs", "deno", "bun", "php",
    "lua", "luajit", "Rscript", "R", "julia", "tclsh", "fish", "pwsh", "osascript", "jq",
    "su", "runuser", "flock", "script",  # their -c is shell code too
}  # fmt: skip
# Programs that join their arguments into one string for a shell to parse (ssh's remote shell, watch).
JOINERS = {"ssh", "watch"}
_CODE_OPTION = re.compile(r"^(-[A-Za-z]*[ceE]|--(eval|exec|command|print|expression|execute)(=.*)?)$")
_EVALUATORS = {"eval", ".", "source", "exec"}
_SEPARATORS = set(";&|()\n")
SAFE_FORMS = (
    "python3 verify_ckpt.py {file}   or  ... \"{file}\"  or  ... '{file}'   or  sh -c 'python3 verify_ckpt.py {file}'"
    "   (or read $GPUJOB_CHECKPOINT_FILE / $1 in the script)"
)


def _commands(template: str) -> tuple[list[list[list[tuple[str, str]]]], bool]:
    """The template as commands of words of (quoting, text) segments, the way /bin/sh splits it (enough
    of it to see where `{file}` stands), and whether a here-document (`<<`) starts before a `{file}`."""
    commands: list[list[list[tuple[str, str]]]] = [[]]
    word: list[tuple[str, str]] = []
    heredoc_first = False
    i, n = 0, len(template)

    def end_word() -> None:
        nonlocal word
        if word:
            commands[-1].append(word)
            word = []

    while i < n:
        c = template[i]
        if c in "'\"":
            close = template.find(c, i + 1) if c == "'" else _double_end(template, i + 1)
            close = n if close < 0 else close
            word.append(("single" if c == "'" else "double", template[i + 1 : close]))
            i = close + 1
            continue
        if c == "\\" and i + 1 < n:
            word.append(("plain", template[i + 1]))
            i += 2
            continue
        if template.startswith("<<", i) and PLACEHOLDER in template[i:]:
            heredoc_first = True
        if c.isspace() or c in _SEPARATORS:
            end_word()
            if c in _SEPARATORS and commands[-1]:
                commands.append([])
            i += 1
            continue
        if template.startswith(PLACEHOLDER, i):
            word.append(("plain", PLACEHOLDER))
            i += len(PLACEHOLDER)
            continue
        word.append(("plain", c))
        i += 1
    end_word()
    return [cmd for cmd in commands if cmd], heredoc_first


def _double_end(text: str, i: int) -> int:
    while i < len(text):
        if text[i] == "\\":
            i += 2
            continue
        if text[i] == '"':
            return i
        i += 1
    return -1


def _text(word: list[tuple[str, str]]) -> str:
    return "".join(t for _, t in word)


def placement_problem(template: str) -> str | None:
    """Why `{file}` in this verify command could become code, or None when every `{file}` stands where
    the expanded name is only ever an argument (the README's forms). Checked at validate and again
    before a check runs; "at any depth": the code of `sh -c '...'` is checked the same way."""
    if PLACEHOLDER not in template:
        return None
    commands, heredoc = _commands(template)
    if heredoc:
        return "{file} inside a here-document (<<) is pasted into the text another program parses as code"
    for words in commands:
        names = [_text(w).rsplit("/", 1)[-1] for w in words]
        for i, word in enumerate(words):
            for kind, text in word:
                if PLACEHOLDER not in text:
                    continue
                if kind == "double" and text != PLACEHOLDER:
                    return (
                        "{file} inside a longer double-quoted string: the outer shell pastes the name into "
                        "that string's text, which an inner command or -c/-e code parses again"
                    )
                earlier = names[:i]
                code_arg = (
                    i > 0 and _CODE_OPTION.match(names[i - 1]) and any(n in INTERPRETERS for n in earlier)
                )
                if kind == "single" and text != PLACEHOLDER:
                    if code_arg and any(n in SHELLS for n in earlier):
                        inner = placement_problem(text)
                        if inner:
                            return f"in the code of {names[i - 2] if i > 1 else 'sh'} -c: {inner}"
                    continue  # a literal the outer shell does not expand
                if code_arg:
                    return f"{{file}} as the code of {names[i - 1]}: the name itself would be run"
                joiner = next((n for n in earlier if n in JOINERS), None)
                if joiner:
                    return f"{{file}} in the arguments of {joiner}, which joins them into text a shell parses"
                if any(n in _EVALUATORS for n in earlier):
                    return f"{{file}} after {next(n for n in earlier if n in _EVALUATORS)}: the name would be run"
    return None
