# SPDX-License-Identifier: GPL-3.0-or-later
# The parts of scripts/device-check.sh that decide things: the time a step may
# take under the run's one deadline, and what a test program's exit and log
# say. Sourced by the check and by its test (tests/scripts/device_check_test.sh).

# Set by the caller: DC_DEADLINE_AT (epoch seconds by which the results must
# be written). DC_RESERVE seconds are kept for writing them, and a step is not
# started with less than DC_MIN_STEP seconds left: it could not finish.
DC_RESERVE=${DC_RESERVE:-10}
DC_MIN_STEP=${DC_MIN_STEP:-5}
DC_KILL_AFTER=5  # `timeout -k`: a process stuck in the driver ignores SIGTERM

dc_seconds_left() {
  echo $((DC_DEADLINE_AT - $(date +%s) - DC_RESERVE))
}

# The limit for a step that wants $1 seconds: all of it, or what the deadline
# leaves once the kill grace is counted; 0 when too little is left to start.
dc_limit_for() {
  local left
  left=$(($(dc_seconds_left) - DC_KILL_AFTER))
  if [ "$left" -lt "$DC_MIN_STEP" ]; then
    echo 0
  elif [ "$left" -lt "$1" ]; then
    echo "$left"
  else
    echo "$1"
  fi
}

# Runs "$@" under limit $1 (from dc_limit_for) and returns its exit status;
# 124 when the limit ended it, 137 when it had to be killed.
dc_run_limited() {
  local limit=$1
  shift
  timeout -k "$DC_KILL_AFTER" "$limit" "$@"
}

# What a Qt Test program's run says: $1 its exit status, $2 its log, $3 the
# limit it ran under. Sets DC_VERDICT (passed, skipped, failed) and DC_TEXT
# (the table's words). The exit status decides; a skip turns the result into
# "skipped" only when the device cases did not run at all (no device) or when
# nothing but the fixture's set-up and tear-down passed.
dc_test_verdict() {
  local code=$1 log=$2 limit=$3 passed skipped failed reason totals
  # Qt Test counts initTestCase and cleanupTestCase as passes: not checks.
  passed=$(grep -E '^PASS ' "$log" 2>/dev/null | grep -cvE '::(initTestCase|cleanupTestCase)\(\)')
  skipped=$(grep -cE '^SKIP ' "$log" 2>/dev/null)
  failed=$(grep -cE '^FAIL! ' "$log" 2>/dev/null)
  # The reason shown: a missing device's when that is one, else the first.
  reason=$({ grep -m1 -E '^SKIP .*no CUDA device' "$log" || grep -m1 -E '^SKIP ' "$log"; } 2>/dev/null |
    sed -E 's/^SKIP +: +[^(]*\([^)]*\) +//' | cut -c1-100 | tr '|' '/')
  totals=$(grep -E '^Totals:' "$log" 2>/dev/null | tail -1)
  case $code in
    124) DC_VERDICT=failed; DC_TEXT="TIMED OUT after $limit s" ;;
    137) DC_VERDICT=failed; DC_TEXT="TIMED OUT after $limit s and killed (it ignored SIGTERM)" ;;
    0)
      if [ -z "$totals" ]; then
        DC_VERDICT=failed; DC_TEXT="FAILED: exit 0 but no Qt Test totals in the log"
      elif grep -qE '^SKIP .*no CUDA device' "$log" || [ "$passed" = 0 ]; then
        DC_VERDICT=skipped; DC_TEXT="skipped: ${reason:-no test function ran}"
      elif [ "$skipped" -gt 0 ]; then
        DC_VERDICT=passed; DC_TEXT="passed ($passed; $skipped skipped: $reason)"
      else
        DC_VERDICT=passed; DC_TEXT="passed ($passed)"
      fi
      ;;
    *)
      DC_VERDICT=failed
      if [ "$code" -gt 128 ]; then
        DC_TEXT="FAILED: killed by signal $((code - 128))"
      else
        DC_TEXT="FAILED (exit $code)"
      fi
      [ "$failed" -gt 0 ] && DC_TEXT="$DC_TEXT: $failed failed, $passed passed, $skipped skipped"
      ;;
  esac
  DC_TOTALS=${totals#Totals: }
}
