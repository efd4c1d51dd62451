#!/usr/bin/env bash
# `make demo`: the quickstart end to end against the local simulator, no account needed.
# start the simulator -> validate -> plan -> apply -> status -> preempt the spot pod -> plan + apply
# again (the run resumes from its last checkpoint) -> pull + verify -> destroy through the approval
# gate -> the metered bill -> stop the simulator (always, via the trap).
# It exits 0 only when it showed the whole loop; any step that fails stops it with the reason and a
# non-zero exit code.
set -u

PY="${PY:-python3}"
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/gpujob-demo.XXXXXX")"
SIMDIR="$(mktemp -d "${TMPDIR:-/tmp}/gpujob-demo-sim.XXXXXX")"
export GPUJOB_SIM_DIR="$SIMDIR"
unset GPUJOB_STATE_DIR
JOB=quickstart
BOLD=$'\033[1m'; DIM=$'\033[2m'; RED=$'\033[31m'; RESET=$'\033[0m'
if [ ! -t 1 ] || [ -n "${NO_COLOR:-}" ]; then BOLD=""; DIM=""; RED=""; RESET=""; fi

say()  { printf '\n%s==> %s%s\n' "$BOLD" "$*" "$RESET"; }
note() { printf '%s    %s%s\n' "$DIM" "$*" "$RESET"; }
fail() { printf '\n%sdemo stopped: %s%s\n' "$RED" "$*" "$RESET" >&2; exit 1; }

# gpujob as `make install` installed it (the Python in $PY), shown as the command a user types.
gpujob() { "$PY" -m gpujob "$@"; }
gj() {
  printf '%s$ gpujob %s%s\n' "$DIM" "$*" "$RESET"
  gpujob "$@"
}
# A step that must succeed: on failure the demo stops with the reason.
must() { gj "$@" || fail "'gpujob $*' failed (exit $?); its message is above"; }

cleanup() {
  say "Stopping the simulator (nothing is left running)"
  gpujob sim down || true
  rm -rf "$WORK" "$SIMDIR"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Poll (never a blind sleep) until "$@" succeeds, for at most $1 seconds.
wait_for() {
  local secs="$1"; shift
  local end=$((SECONDS + secs))
  until "$@" >/dev/null 2>&1; do
    [ "$SECONDS" -ge "$end" ] && return 1
    sleep 1
  done
}
has_checkpoint() { gpujob ssh -f job.yaml -- ls /workspace/ckpt 2>/dev/null | grep -q step_; }
resumed()        { gpujob logs -n 400 job.yaml 2>/dev/null | grep -q "resumed from step"; }

"$PY" -c 'import gpujob' 2>/dev/null || fail "gpujob is not installed for $PY: run make install"
cp "$HERE/job.yaml" "$HERE/train.py" "$HERE/verify_ckpt.py" "$WORK/"
cd "$WORK" || exit 1

say "Starting the local simulator of RunPod and Paperspace"
must sim up
eval "$(gpujob sim env)"

say "1. Validate the job file"
must validate job.yaml

say "2. Plan: what apply will do, what it costs, what it would destroy"
must plan job.yaml

say "3. Apply: network volume, spot pod, code sync, run launched under tmux"
must apply job.yaml --auto-approve

say "4. Progress: wait for the first checkpoint on the network volume"
wait_for 90 has_checkpoint || fail "no checkpoint on the pod within 90 s; see: gpujob logs job.yaml"
must status job.yaml
must logs -n 5 job.yaml
must watch --once job.yaml

say "5. The platform preempts the spot pod (SIGTERM, then SIGKILL after the grace)"
must sim inject preempt
must status job.yaml

say "6. Plan and apply again: a pod comes back with the same network volume and the run resumes"
gj plan job.yaml --detailed-exitcode
[ $? -eq 2 ] || fail "the plan after the preemption shows no change to make"
must apply job.yaml --auto-approve
wait_for 90 resumed || fail "the run did not log 'resumed from step' within 90 s; see: gpujob logs job.yaml"
RESUMED="$(gpujob logs -n 400 job.yaml | grep -m1 "resumed from step")"
printf '%s\n' "$RESUMED"
must status job.yaml

say "7. Pull the checkpoints, check their SHA-256 against the pod and load each with verify_ckpt.py"
must pull job.yaml

say "8. Destroy, first without approving: the teardown gate refuses"
if gj destroy job.yaml --auto-approve; then
  fail "destroy ran without approval: the teardown gate is broken"
fi
note "(refused, as it must be: teardown needs each action id approved)"

say "9. Destroy with the exact action ids approved (after a fresh pull and verify)"
must destroy job.yaml --auto-approve --approve $JOB.pod.terminate --approve $JOB.network_volume.delete-volume

say "10. The metered bill: every rate is back to zero"
must sim bill
gpujob sim bill --format json | "$PY" -c '
import json, sys
bill = json.load(sys.stdin)
running = [i for i in bill["items"] if i["rate_per_hour"] > 0]
sys.exit(f"still billing: {running}" if running else 0)' || fail "something still bills after the destroy"

say "The whole loop ran: plan, apply, preempt, resume ($RESUMED), pull + verify, gated destroy, bill"
exit 0
