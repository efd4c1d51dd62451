#!/bin/sh
# sshd ForceCommand of the simulator's pods and of the test sshd: runs the client's command as sshd
# would (`$SHELL -c "$SSH_ORIGINAL_COMMAND"`, or a login shell), unless the fault file ($1) holds a
# stalled-machine fault, one line `MODE BYTES [PATTERN]`:
#
#   sleep 0 [PATTERN]     matching commands never answer: no byte, no exit status
#   after N [PATTERN]     matching commands' output stops after N bytes; then nothing, no exit status
#   trickle N [PATTERN]   matching commands' output comes one byte every N seconds (never idle, never
#                         done: a pod holding a pull open at a crawl)
#   take N [PATTERN]      matching commands read N bytes of their input, then the machine stops taking
#                         any (an upload stalled mid-stream); no exit status
#   arm 0 PATTERN         matching commands run as usual; once one finished, the fault in
#                         $1.next takes over (a stall that starts at a given step, e.g. a teardown)
#
# PATTERN (the rest of the line) picks the commands whose text contains it; empty = every command.
# A stalled command holds its channel until the client's connection is gone (its sshd exits), so
# nothing outlives the test that stalled it.
#
# Arguments after the fault file, if any, are the program that runs the client's command instead of
# `$SHELL -c` (a plain simulator pod's podshell, which maps the pod's paths).
fault_file=$1
shift
run() {
  [ $# -gt 0 ] && exec "$@"
  if [ -n "${SSH_ORIGINAL_COMMAND:-}" ]; then
    exec "${SHELL:-/bin/sh}" -c "$SSH_ORIGINAL_COMMAND"
  fi
  exec "${SHELL:-/bin/sh}" -l
}
hold() {
  while kill -0 "$PPID" 2>/dev/null; do sleep 0.2; done
  exit 0
}
[ -n "${SSH_ORIGINAL_COMMAND:-}" ] && [ -r "$fault_file" ] || run "$@"
read -r mode bytes pattern < "$fault_file"
[ -n "${mode:-}" ] || run "$@"
case $SSH_ORIGINAL_COMMAND in
  *"$pattern"*) ;;
  *) run "$@" ;;
esac
case $mode in
  sleep) hold ;;
  after)
    if [ $# -gt 0 ]; then "$@"; else "${SHELL:-/bin/sh}" -c "$SSH_ORIGINAL_COMMAND"; fi | head -c "$bytes"
    hold
    ;;
  trickle)
    if [ $# -gt 0 ]; then "$@"; else "${SHELL:-/bin/sh}" -c "$SSH_ORIGINAL_COMMAND"; fi | {
      while kill -0 "$PPID" 2>/dev/null; do dd bs=1 count=1 2>/dev/null; sleep "$bytes"; done
    }
    exit 0
    ;;
  arm)
    if [ $# -gt 0 ]; then "$@"; else "${SHELL:-/bin/sh}" -c "$SSH_ORIGINAL_COMMAND"; fi
    status=$?
    # Before the exit status reaches the client: its next command already meets the armed fault.
    [ -r "$fault_file.next" ] && mv -f "$fault_file.next" "$fault_file"
    exit $status
    ;;
  take)
    # The command sees its first N bytes, then an input that never ends (until the client is gone).
    { head -c "$bytes"; hold; } | if [ $# -gt 0 ]; then "$@"; else "${SHELL:-/bin/sh}" -c "$SSH_ORIGINAL_COMMAND"; fi
    hold
    ;;
  *) run "$@" ;;
esac
