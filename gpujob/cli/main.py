"""The `gpujob` command. Subcommands live in gpujob/cli/cmd_<name>.py and are imported only when run,
so `gpujob --help` never pays for httpx, asyncssh, deepdiff, jinja2 or rich."""

from __future__ import annotations

import importlib
import os
import sys

import click

from gpujob import __version__

# gpujob uses no pydantic plugins; looking for them scans every installed distribution's entry points
# (~10-30 ms at each start). setdefault: a user who wants a plugin can still say so.
os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
if os.environ["PYDANTIC_DISABLE_PLUGINS"] in ("__all__", "1", "true"):
    # With plugins off, pydantic's plugin loader is only an import of importlib.metadata (and email.*,
    # ~15 ms). Standing in for it answers exactly what the real one answers when plugins are disabled.
    import types

    _no_plugins = types.ModuleType("pydantic.plugin._loader")
    _no_plugins.get_plugins = lambda: ()  # type: ignore[attr-defined]
    sys.modules.setdefault("pydantic.plugin._loader", _no_plugins)

# name -> (module, one-line help with an example). The help text lives here so listing needs no import.
COMMANDS: dict[str, tuple[str, str]] = {
    "init": (
        "cmd_init",
        "Write a starter job.yaml + resumable train.py.   e.g. gpujob init --platform runpod",
    ),
    "validate": ("cmd_validate", "Check job files and report every problem.   e.g. gpujob validate job.yaml"),
    "plan": ("cmd_plan", "Show what apply would do, cost and destroy.   e.g. gpujob plan --format markdown"),
    "apply": ("cmd_apply", "Make live state match the spec, safely.   e.g. gpujob apply plan.json"),
    "show": ("cmd_show", "Render a saved plan for review.   e.g. gpujob show plan.json --format markdown"),
    "destroy": (
        "cmd_destroy",
        "Plan and run the gated teardown of a job.   e.g. gpujob destroy --approve ID",
    ),
    "state": (
        "cmd_state",
        "A job's live state; moving gpujob's own.   e.g. gpujob state migrate --to postgresql://…",
    ),
    "status": ("cmd_status", "Run status: state, cost, last checkpoint.   e.g. gpujob status"),
    "logs": ("cmd_logs", "Show the run's log.   e.g. gpujob logs -f"),
    "pull": ("cmd_pull", "Pull and verify checkpoints (resumable).   e.g. gpujob pull"),
    "ssh": ("cmd_ssh", "Open a shell on the job's machine.   e.g. gpujob ssh --print"),
    "audit": ("cmd_audit", "Find everything billing in the account.   e.g. gpujob audit --format json"),
    "cost": ("cmd_cost", "Spend so far, burn rate and projection.   e.g. gpujob cost"),
    "budget": (
        "cmd_budget",
        "The month's spend and forecast per job against the project budget.   e.g. gpujob budget",
    ),
    "rehearse": (
        "cmd_rehearse",
        "Preemption drill: interrupt, recover, prove the resume.   e.g. gpujob rehearse",
    ),
    "watch": ("cmd_watch", "Keep jobs true to their files, unattended.   e.g. gpujob watch --once"),
    "import": (
        "cmd_import",
        "Adopt an existing pod, volume or machine into a job.   e.g. gpujob import bert pod-abc123",
    ),
    "pr-comment": (
        "cmd_pr_comment",
        "The plan as one PR/MR comment, edited on each push.   e.g. gpujob pr-comment post --plan plan.md",
    ),
    "restart": ("cmd_restart", "Relaunch a job's run; it resumes.   e.g. gpujob restart bert"),
    "force-unlock": ("cmd_lock", "Remove a stale apply lock.   e.g. gpujob force-unlock bert"),
    "doctor": ("cmd_doctor", "Check the team setup and every API read (read-only).   e.g. gpujob doctor"),
    "sim": ("cmd_sim", "Local simulator of RunPod and Paperspace.   e.g. gpujob sim up"),
}


class LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        entry = COMMANDS.get(cmd_name)
        if entry is None:
            return None
        module = importlib.import_module(f"gpujob.cli.{entry[0]}")
        command: click.Command = module.command
        return command

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [(name, help_) for name, (_, help_) in COMMANDS.items()]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


EPILOG = """\b
Examples:
  gpujob validate                       check job.yaml (or every *.job.yaml / jobs/*.yaml)
  gpujob sim up && eval "$(gpujob sim env)"   rehearse against the local simulator
  gpujob plan -o plan.json              save a plan for review
  gpujob apply plan.json                execute exactly that plan
"""


@click.group(
    cls=LazyGroup,
    epilog=EPILOG,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 120, "terminal_width": 120},
)
@click.version_option(__version__, prog_name="gpujob")
def cli() -> None:
    """gpujob: plan and apply GPU training jobs on RunPod and Paperspace.

    Every plan shows what each action costs and keeps costing, what data it destroys,
    and every platform trap the spec walks into.
    """


def main() -> None:
    """The `gpujob` process (`python -m gpujob` and the installed script): the command line, then exit."""
    import gc

    from gpujob.depwarnings import quiet_known

    quiet_known()
    # gpujob runs on asyncio. httpcore imports trio whenever it is installed, only to tell which event
    # loop it runs under (~60 ms, a tenth of `gpujob status`'s start): marked absent in this process,
    # `import trio` fails as when it is not installed, and httpcore uses anyio, as it does then. A
    # process that imported trio already keeps it.
    sys.modules.setdefault("trio", None)  # type: ignore[arg-type]
    try:
        cli()
    finally:
        # The process ends here and every live object with it. Frozen, they are skipped by the collections
        # the interpreter runs while it shuts down, which otherwise walk all of them (pydantic's schemas
        # and validators): ~15% of `gpujob validate`'s time. Only here, never in cli(), which tests call
        # in-process, where freezing would keep uncollected garbage alive.
        gc.freeze()


def run_command(func, *args, **kwargs):  # type: ignore[no-untyped-def]
    """Run a command body; turn expected failures into one clear message and an exit code."""
    from gpujob.cli.wiring import wire
    from gpujob.errors import GpujobError

    wire()  # the composition root: what plugs into plan, apply and watch (gpujob.plan.capability)
    try:
        return func(*args, **kwargs)
    except GpujobError as exc:
        from gpujob.redact import from_machine

        # A message may quote the machine (a remote command's stderr): shown like any text from it.
        click.echo(from_machine(exc.render()), err=True)
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        click.echo("Interrupted.", err=True)
        sys.exit(130)
