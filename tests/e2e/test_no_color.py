"""--no-color and NO_COLOR: every command run at a terminal (stdin, stdout, stderr a pseudo-terminal)
prints no escape sequence with either, against the real simulator."""

from __future__ import annotations

from tests.e2e.e2e_support import Project, poll
from tests.e2e.pty_support import run_in_pty

ESC = b"\x1b"
TERM = "quickstart.pod.terminate"
DELVOL = "quickstart.network_volume.delete-volume"


def plain_both_ways(p: Project, *args: str, ok: tuple[int, ...] = (0,)) -> list[bytes]:
    """The command once with --no-color, once with NO_COLOR=1; each at a terminal, neither with ESC."""
    colour_env = {k: v for k, v in p.env.items() if k != "NO_COLOR"}
    outs = []
    for argv, env in (([*args, "--no-color"], colour_env), (list(args), {**colour_env, "NO_COLOR": "1"})):
        code, out = run_in_pty(argv, p.dir, env)
        text = out.decode(errors="replace")
        assert code in ok, f"gpujob {' '.join(argv)} exited {code}:\n{text}"
        assert ESC not in out, f"gpujob {' '.join(argv)} printed an escape sequence:\n{text!r}"
        outs.append(out)
    return outs


def test_every_command_is_plain_at_a_terminal_with_no_color_or_NO_COLOR(project: Project) -> None:
    p = project
    colour_env = {k: v for k, v in p.env.items() if k != "NO_COLOR"}
    # The control: at a terminal and without either, the plan is coloured (so the check below can fail).
    code, coloured = run_in_pty(["plan"], p.dir, colour_env)
    assert code == 0 and ESC in coloured, coloured.decode(errors="replace")

    plain_both_ways(p, "plan")
    plain_both_ways(p, "validate")
    first, _ = plain_both_ways(p, "apply", "--auto-approve")
    assert b"Apply finished" in first
    poll("a checkpoint", lambda: (p.status().get("run") or {}).get("last_checkpoint"))
    plain_both_ways(p, "status")
    plain_both_ways(p, "state", "show")
    plain_both_ways(p, "logs", "-n", "20")
    plain_both_ways(p, "logs", "-n", "20", "--raw")  # --no-color wins over --raw; NO_COLOR alone does not
    plain_both_ways(p, "pull")
    plain_both_ways(p, "cost")
    plain_both_ways(p, "audit", ok=(0, 2))
    plain_both_ways(p, "watch", "--once", ok=(0, 1, 2, 3))
    plain_both_ways(p, "doctor", ok=(0, 1))
    refused, _ = plain_both_ways(p, "destroy", "--auto-approve", ok=(1,))
    assert b"need explicit approval" in refused
    gone, _ = plain_both_ways(p, "destroy", "--auto-approve", "--approve", TERM, "--approve", DELVOL)
    assert b"Destroy finished" in gone
