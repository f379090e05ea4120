# SPDX-License-Identifier: GPL-3.0-or-later
# What the shell tests share, sourced after `set -uo pipefail`: skip (exit
# 77, CTest's SKIP_RETURN_CODE), fail (counted), contains, and the verdict.
failures=0
skip() {
  echo "SKIP: $*"
  exit 77
}
fail() {
  echo "FAIL: $*"
  failures=$((failures + 1))
}
contains() { # $1 file, $2 extended regex, $3 what
  if grep -qE "$2" "$1"; then echo "ok: $3"; else fail "$3: no /$2/ in $1"; fi
}
verdict() {
  [ "$failures" = 0 ] || exit 1
  echo "all passed"
}
