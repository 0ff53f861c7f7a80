#!/usr/bin/env bash
# One phase of a make target, with a line when it starts and one when it ends
# with its time (issue 21.4), so a long run shows where it is:
#   scripts/phase.sh [--log FILE] NAME -- CMD [ARG...]
# prints "== NAME: start", runs CMD, then "== NAME: passed in N s" or
# "== NAME: FAILED (exit S) in N s", and exits with CMD's status.
# With --log, CMD's output goes to FILE and is printed whole just before the
# end line: phases run at once keep their output apart.
# With PHASE_SUMMARY naming a file, the end line is appended to it as well
# (scripts/test.sh prints them together at the end).
# Sourced (. scripts/phase.sh), it defines the function phase, the same,
# which can run the script's own functions, and kill_tree.

phase() {
  local log="" name s=0 t0 t
  if [ "${1:-}" = --log ]; then log="$2"; shift 2; fi
  name="${1:?usage: phase [--log FILE] NAME -- CMD...}"; shift
  [ "${1:-}" = -- ] && shift
  [ $# -gt 0 ] || { echo "phase: $name: no command" >&2; return 2; }
  echo "== $name: start"
  t0=$(date +%s)
  if [ -n "$log" ]; then
    "$@" >"$log" 2>&1 || s=$?
    cat "$log"
  else
    "$@" || s=$?
  fi
  t=$(( $(date +%s) - t0 ))
  local end="== $name: passed in $t s"
  [ "$s" = 0 ] || end="== $name: FAILED (exit $s) in $t s"
  echo "$end"
  if [ -n "${PHASE_SUMMARY:-}" ]; then echo "$end" >>"$PHASE_SUMMARY"; fi
  return "$s"
}

# kill_tree PID: SIGTERM to PID and every process below it, children first
# stopped (SIGSTOP) so that none forks past it. For a script's own background
# jobs, which ignore the terminal's Ctrl-C.
kill_tree() {
  local c
  kill -STOP "$1" 2>/dev/null || return 0
  for c in $(pgrep -P "$1" 2>/dev/null); do kill_tree "$c"; done
  kill -TERM "$1" 2>/dev/null
  kill -CONT "$1" 2>/dev/null
  return 0
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  set -uo pipefail
  phase "$@"
  exit $?
fi
