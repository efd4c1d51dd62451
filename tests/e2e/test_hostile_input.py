"""Hostile input, end to end against the simulator (real sshd pods, the CLI as processes): a run whose
checkpoint directory holds names built to attack the user's terminal, PR comments and shell.

  - every command that shows those names or reads that pod (status, plan in each format, pull, logs,
    watch --once, cost, state show, audit) prints no raw escape byte and no live HTML/markdown;
  - a verify command that would paste a name into code (`sh -c "... {file}"`) is refused by validate
    and by pull, and a name like `a;touch PWNED;b` never runs, in any form the README documents.
"""

from __future__ import annotations

import json
import re

from tests.e2e.e2e_support import Project, poll

# The corpus (each a legal file name: no "/" and no NUL). The last one written is the newest checkpoint.
CORPUS = [
    "step-1<img src=x onerror=alert(1)>.json",
    "step-2[click me](javascript:alert(1)) @org-admins.json",
    "step-3\u202etxt.exe\u2066x\u2069.json",
    "step-4\x9b2J\x9d52;c;eA==\x9c.json",
    "step-5\nok: 0 to destroy.json",
    "step-6 a;touch PWNED1;b.json",
    "step-7 b`touch PWNED2`c.json",
    "step-8 x$(touch PWNED3)y.json",
    "step-9\x1b[2J\x1b[3J\x1b[H.json",
    "step-10\x1b]52;c;cm0gLXJmIH4=\x07.json",  # the newest: OSC 52 writes the clipboard
]
RUN = f"""import json, os, time
d = os.environ["GPUJOB_CHECKPOINT_DIR"]
for i, name in enumerate({CORPUS!r}):
    tmp = os.path.join(d, ".tmp-%d" % i)
    with open(tmp, "w") as f:
        json.dump({{"step": i}}, f)
    os.utime(tmp, (time.time() - 100 + i, time.time() - 100 + i))
    os.replace(tmp, os.path.join(d, name))
print("wrote the corpus", flush=True)
time.sleep(600)
"""
LOADS = 'python3 -c "import json,sys; json.load(open(sys.argv[1]))"'
# What a terminal or a PR comment would act on: C0 but newline/tab, DEL, C1, bidi controls.
RAW = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def _hostile_run(p: Project, verify: str) -> None:
    (p.dir / "hostile_ckpts.py").write_text(RUN)
    job = p.dir / "job.yaml"
    text = job.read_text().replace("command: python3 train.py", "command: python3 hostile_ckpts.py")
    job.write_text(text.replace("verify: python3 verify_ckpt.py {file}", f"verify: {verify}"))
    p.gj("apply", "--auto-approve")
    poll(
        "the corpus to be written",
        lambda: "step-10" in str((p.status().get("run") or {}).get("last_checkpoint")),
    )


def _no_raw(what: str, text: str) -> None:
    found = RAW.search(text)
    assert found is None, f"{what} printed a raw {found.group()!r}:\n{text!r}"


def _no_live_markdown(text: str) -> None:
    outside = re.sub(r"(`+)[^`]*?\1", "", text)  # code spans are inert
    outside = re.sub(r"```.*?```", "", outside, flags=re.S)
    assert not re.search(r"<img|<script|onerror=", outside, re.I), text
    assert not re.search(r"(?<!\\)\[click me(?<!\\)\]\(", outside), text
    assert not re.search(r"(?<![\w&#])@org-admins", outside), text


def _pwned(p: Project) -> list[str]:
    return sorted(str(x) for x in p.dir.parent.rglob("PWNED*"))


def test_every_command_shows_the_hostile_corpus_inert(project: Project) -> None:
    p = project
    _hostile_run(p, f"{LOADS} {{file}}")
    outputs: dict[str, str] = {}
    for args in (
        ("status",),
        ("status", "--no-color"),
        ("status", "--format", "json"),
        ("plan", "--no-color"),
        ("plan", "--format", "markdown"),
        ("plan", "--format", "json"),
        ("pull",),
        ("logs", "-n", "20"),
        ("watch", "--once"),
        ("cost",),
        ("state", "show"),
        ("audit",),
        ("audit", "--format", "markdown"),
    ):
        done = p.gj(*args, check=False)
        outputs[" ".join(args)] = done.stdout + done.stderr
        _no_raw(" ".join(args), done.stdout + done.stderr)

    # the names did reach every output that shows them, visibly
    assert "\\x1b]52;c;cm0gLXJmIH4=\\x07" in outputs["status"], outputs["status"]
    assert "\\x1b]52;c;cm0gLXJmIH4=\\x07" in outputs["plan --no-color"], outputs["plan --no-color"]
    assert "step-10" in outputs["plan --format markdown"]
    _no_live_markdown(outputs["plan --format markdown"])
    row = json.loads(p.gj("status", "--format", "json").stdout)[0]
    assert row["run"]["last_checkpoint"] == CORPUS[-1]  # JSON: the real name
    assert not any(line.startswith("ok: 0 to destroy") for o in outputs.values() for line in o.splitlines())
    assert _pwned(p) == []
    pulled = {x.name for x in (p.dir / "checkpoints").iterdir()}
    c0 = {n for n in CORPUS if re.search("[\x00-\x1f]", n)}  # a pull refuses names with C0 controls
    assert c0 and pulled == set(CORPUS) - c0  # the rest arrived, each as a name


def test_a_verify_command_that_would_run_a_name_is_refused_and_nothing_runs(project: Project) -> None:
    p = project
    # the documented safe form first: the run writes its corpus, the pull verifies each name as a name
    _hostile_run(p, f"sh -c '{LOADS} {{file}}'")
    job = p.dir / "job.yaml"
    safe = job.read_text()
    done = p.gj("pull", check=False)
    assert "✓ step-8 x$(touch PWNED3)y.json" in done.stdout, done.stdout + done.stderr  # verified, as a name
    assert _pwned(p) == [], done.stdout + done.stderr

    # then the form the issue reproduced: the outer shell pastes the name into the inner shell's text
    job.write_text(re.sub(r"verify: .*", 'verify: sh -c "python3 verify_ckpt.py {file}"', safe))
    for args in (("validate",), ("pull",), ("plan", "--no-color")):
        refused = p.gj(*args, check=False)
        out = refused.stdout + refused.stderr
        assert refused.returncode == 1, (args, out)
        assert "checkpoint.verify" in out and "longer double-quoted string" in out, (args, out)
        assert "sh -c 'python3 verify_ckpt.py {file}'" in out, (args, out)  # the safe forms are shown
    assert _pwned(p) == []
