"""Every failure gpujob expects is a GpujobError; the CLI prints it on one line with a hint.

GpujobError                   exit 1 (spec problems exit 1 too, from `validate`)
├── SpecError                 job.yaml is invalid; .problems: list[SpecProblem] (file:line:col)
├── ProfileError              a bundled platform profile is invalid
├── ConfigError               missing API key, bad env var, unknown platform
├── ProviderError             .platform, .call, .status; message names the call and what to do
│   ├── ProviderAuthError     401/403: which env var to set
│   ├── ProviderBalanceError  402: top up the account
│   ├── ProviderCapacityError no stock for the requested GPU/region/cloud (try the next candidate)
│   ├── ProviderNotFound      the resource is gone
│   ├── ProviderConflict      409: action not valid in this state
│   └── ProviderUnavailable   retries spent on 429/5xx/timeouts
├── SSHError
│   ├── SSHConnectError
│   └── RemoteCommandError    .exit_status, .stderr_tail, the masked command
├── PlanBlockedError          apply refused a plan with errors; .findings: their lines, printed above
├── StalePlanError            live state or spec changed since the saved plan was made
│   └── PlanMismatchError     a saved plan is not what gpujob derives now (edited, or the world moved)
├── GateError                 teardown refused: checkpoints not pulled/verified, or not approved
├── LockError                 another apply holds the job's lock
├── StateError                the state store (PostgreSQL) cannot be reached or used
│   └── StateKeyError         GPUJOB_STATE_KEY missing or wrong for an encrypted secret
└── SimulatorError            the local simulator is not running / cannot run here
"""

from __future__ import annotations


def command_text(*words: str) -> str:
    """A command for a hint, the one way hints write commands: shell-quoted, in backticks, runnable
    as printed (tests/e2e/test_hints.py runs every one the e2e scenarios print)."""
    import shlex

    return f"`{shlex.join(words)}`"


def job_file_args(spec_path: object) -> list[str]:
    """The job file a follow-up command must name: none for the default ./job.yaml."""
    from pathlib import Path

    path = Path(str(spec_path))
    return [] if path in (Path("job.yaml"), Path.cwd() / "job.yaml") else [str(path)]


def ssh_words(spec_path: object, *remote: str) -> list[str]:
    """gpujob ssh [-f JOBFILE] -- REMOTE..."""
    return [
        "gpujob",
        "ssh",
        *(["-f", *job_file_args(spec_path)] if job_file_args(spec_path) else []),
        "--",
        *remote,
    ]


class GpujobError(Exception):
    """Base of every expected failure. `hint` says what to do next; a command in it is written with
    command_text (in backticks), so it can be copied and run as it is."""

    exit_code = 1

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.hint = hint

    def render(self) -> str:
        text = f"Error: {self}"
        if self.hint:
            text += f"\n  hint: {self.hint}"
        return text


class SpecError(GpujobError):
    """One or more problems in job files; `problems` holds every one (file:line:col: key: message)."""

    def __init__(self, problems: list, *, hint: str | None = None) -> None:  # list[SpecProblem]
        self.problems = problems
        super().__init__("\n".join(str(p) for p in problems), hint=hint)

    def render(self) -> str:
        return "\n".join(str(p) for p in self.problems)


class PlanBlockedError(GpujobError):
    """Apply refused a plan with error findings: they are printed above the refusal, in the plan's words
    (`findings`: the plan's lines, gpujob.plan.finding_lines.error_lines)."""

    def __init__(self, findings: list[str], *, hint: str | None = None) -> None:
        self.findings = findings
        n = sum(1 for line in findings if line.lstrip().startswith("✗ error"))
        self.refusal = f"the plan has {n} error finding(s) (above); nothing was applied"
        super().__init__("\n".join([*findings, self.refusal]), hint=hint)

    def render(self) -> str:  # the findings first, then the refusal that points at them
        text = "\n".join([*self.findings, f"Error: {self.refusal}"])
        return text + (f"\n  hint: {self.hint}" if self.hint else "")


class ProfileError(GpujobError):
    pass


class ConfigError(GpujobError):
    pass


class ProviderError(GpujobError):
    def __init__(
        self,
        message: str,
        *,
        platform: str = "",
        call: str = "",
        status: int | None = None,
        hint: str | None = None,
    ) -> None:
        self.platform = platform
        self.call = call
        self.status = status
        prefix = " ".join(x for x in (platform, call) if x)
        where = f"{prefix}: " if prefix else ""
        code = f"HTTP {status}: " if status is not None else ""
        super().__init__(f"{where}{code}{message}", hint=hint)


class ProviderAuthError(ProviderError):
    pass


class ProviderBalanceError(ProviderError):
    pass


class ProviderCapacityError(ProviderError):
    pass


class ProviderNotFound(ProviderError):
    pass


class ProviderConflict(ProviderError):
    pass


class ProviderUnavailable(ProviderError):
    pass


class OutcomeUnknown(ProviderUnavailable):
    """A non-idempotent call (create) may or may not have happened: look the resource up by name."""


class MalformedResponse(OutcomeUnknown):
    """A success status whose body is not what the call returns (an error object under 200, a listing
    without its list, an object without its id). Never read as success or as "nothing exists"; after a
    create it is an unknown outcome, so the name is looked up before anything is created again."""

    def __init__(self, message: str) -> None:
        super().__init__(
            f"malformed response: {message}",
            hint="the platform answered with something unexpected; re-run later (gpujob re-reads live state)",
        )


class SSHError(GpujobError):
    pass


class SSHConnectError(SSHError):
    pass


class SSHKeyRefused(SSHConnectError):
    """The machine answered and refused the project key: trying again with the same key cannot help."""


class RemoteCommandError(SSHError):
    def __init__(self, command: str, exit_status: int | None, stderr_tail: str) -> None:
        self.command = command
        self.exit_status = exit_status
        self.stderr_tail = stderr_tail
        super().__init__(f"remote command failed (exit {exit_status}): {command}\n{stderr_tail}".rstrip())


class StalePlanError(GpujobError):
    pass


class PlanMismatchError(StalePlanError):
    pass


class GateError(GpujobError):
    pass


class LockError(GpujobError):
    pass


class StateError(GpujobError):
    pass


class StateKeyError(StateError):
    pass


class SimulatorError(GpujobError):
    pass
